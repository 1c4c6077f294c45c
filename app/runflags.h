#pragma once

#include <QCommandLineOption>

namespace ks::cli {

// The options of `ksearch run`, shared by the command and its resume check.
struct RunFlags {
    QCommandLineOption help {{u"h"_qs, u"help"_qs}, u"Show this help."_qs};
    QCommandLineOption task {u"task"_qs, u"task name or folder (a new session)"_qs, u"NAME|PATH"_qs};
    QCommandLineOption session {u"session"_qs, u"the session folder (required)"_qs, u"DIR"_qs};
    QCommandLineOption resume {u"resume"_qs, u"continue the session in --session"_qs};
    QCommandLineOption strategy {u"strategy"_qs, u"ksearch (default), evolve or greedy"_qs, u"NAME"_qs};
    QCommandLineOption budget {u"budget"_qs, u"evaluator calls, compile failures included (default 120)"_qs, u"N"_qs};
    QCommandLineOption k {u"k"_qs, u"attempts without improvement that end an action (default 7)"_qs, u"N"_qs};
    QCommandLineOption backend {u"backend"_qs, u"cuda (default) or host"_qs, u"NAME"_qs, u"cuda"_qs};
    QCommandLineOption language {u"language"_qs,
        u"of the candidates: cuda, cpp, triton or python (default: cuda on the cuda backend, cpp on host)"_qs,
        u"NAME"_qs};
    QCommandLineOption python {
        u"python"_qs, u"the python3 with torch (and triton) for python and triton candidates"_qs, u"PATH"_qs};
    QCommandLineOption seed {
        u"seed"_qs, u"a program to start from (evaluated first, attached to the root)"_qs, u"FILE"_qs};
    QCommandLineOption target {u"target"_qs, u"stop once the best J reaches this"_qs, u"J"_qs};
    QCommandLineOption maxTime {u"max-time"_qs, u"stop after this many seconds of running"_qs, u"S"_qs};
    QCommandLineOption maxDollars {u"max-dollars"_qs, u"dollar cap on LLM calls"_qs, u"D"_qs};
    QCommandLineOption minImprovement {u"min-improvement"_qs,
        u"relative gain that counts as progress for K (default 0.01; raise it on noisy hosts)"_qs, u"F"_qs};
    QCommandLineOption frozen {u"frozen-values"_qs, u"ablation: V never changes after insertion"_qs};
    QCommandLineOption flat {u"flat"_qs, u"ablation: a flat list of intents instead of a tree"_qs};
    QCommandLineOption islands {u"islands"_qs, u"evolve: number of islands (default 3)"_qs, u"N"_qs};
    QCommandLineOption randomSeed {u"random-seed"_qs, u"evolve: seed of its random choices (default 1)"_qs, u"N"_qs};
    QCommandLineOption benchSeconds {
        u"bench-seconds"_qs, u"timing-loop cap per workload (default 1)"_qs, u"S"_qs, u"1"_qs};
    QCommandLineOption unconfined {u"unconfined"_qs,
        u"run candidates without namespaces or limits, to debug one: every evaluation records it (docs/security.md)"_qs};
    QCommandLineOption sanitizeFailures {u"sanitize-failures"_qs,
        u"run a CUDA candidate that crashes or computes wrong results once more under compute-sanitizer's TOOL "
        "(memcheck, racecheck, initcheck or synccheck) and show its findings to the code policy"_qs,
        u"TOOL"_qs};
    QCommandLineOption label {u"label"_qs, u"a note stored with the session: how and why it was made"_qs, u"TEXT"_qs};
    QCommandLineOption prices {u"prices"_qs, u"price overrides (JSON)"_qs, u"FILE"_qs};
    QCommandLineOption quiet {u"quiet"_qs, u"only the summary"_qs};
    QCommandLineOption worker {u"worker"_qs,
        u"evaluate in a worker started by this shell command, e.g. \"ssh gpu-box ksearch worker\"; repeat it for "
        "several (docs/workers.md)"_qs,
        u"CMD"_qs};
    QCommandLineOption remote {u"remote"_qs,
        u"evaluate on a GPU server over ssh (your ssh config and agent; $KSEARCH_SSH replaces the ssh command): "
        "ssh://[user@]host[:port][/path/to/ksearch]; repeat it for several"_qs,
        u"URL"_qs};
    QCommandLineOption gpus {
        u"gpus"_qs, u"local GPUs, one evaluator each: all, or a list such as 0,2,5"_qs, u"LIST"_qs};
    QCommandLineOption localWorkers {u"local-workers"_qs,
        u"evaluators per local device (the CPU, or each GPU of --gpus): runs take turns on the device, compiles "
        "overlap with them (default 1; 0 with --worker: evaluate only there)"_qs,
        u"N"_qs};
    QCommandLineOption slurm {u"slurm"_qs,
        u"one SLURM allocation for the search, each worker a job step in it: PARTITION[,SALLOC OPTIONS], e.g. "
        "gpu,--gpus-per-task=1,--time=240"_qs,
        u"SPEC"_qs};
    QCommandLineOption slurmWorkers {
        u"slurm-workers"_qs, u"worker steps in the SLURM allocation (default 1)"_qs, u"N"_qs, u"1"_qs};
    QCommandLineOption slurmKsearch {u"slurm-ksearch"_qs,
        u"the ksearch the cluster's nodes run (default: this one's path, for a shared file system)"_qs, u"PATH"_qs};
    QCommandLineOption parallel {u"parallel"_qs,
        u"actions in progress at once (default: one per evaluator; more keeps the LLM writing while all are busy)"_qs,
        u"P"_qs};
    QCommandLineOption workerTask {u"worker-task"_qs,
        u"the task as the worker finds it (default: its name, on the worker's task path)"_qs, u"NAME|PATH"_qs};
};
} // namespace ks::cli
