#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ks {

// One session folder as the session library lists it and the comparison of sessions draws it:
// what it searched, how far it got, its best-J curve and its best kernel's speedups, all read
// from the folder (never written: a live run may be appending to it).
struct SessionOverview {
    // Best J after one evaluation, with where it happened.
    struct Point {
        int evaluation = 0; // 1 for the first evaluation
        double seconds = 0.0; // of the run's time (paused and stopped time excluded)
        double bestScore = 0.0; // 0 until something passed
    };

    std::filesystem::path dir;
    std::string error; // why the folder could not be read (the figures below are then empty)
    std::string taskName, strategy, backend, language, label, created;
    int evaluations = 0, budget = 0;
    double bestScore = 0.0; // J of the best passing attempt; 0 when none passed
    std::string bestNode; // where it is
    double dollars = 0.0; // spent on LLM calls
    bool unpricedCalls = false; // some calls used a model without a price: dollars is a floor
    std::string finishedReason; // empty: interrupted, or running in another process
    double elapsedSeconds = 0.0;
    std::vector<Point> curve; // one point per evaluation, in the order they were recorded
    // The best attempt's speedup over the baseline on each workload (0 where it failed or was
    // not timed), for fast_p.
    std::vector<double> bestSpeedups;
};

// Reads dir/session.json and replays dir/journal.jsonl; `error` says what was wrong instead.
SessionOverview readSessionOverview(const std::filesystem::path& dir);

// FlashInfer-Bench's fast_p: the fraction of workloads on which a kernel is correct and more
// than p times as fast as the baseline (0 with no workloads).
double fastP(const std::vector<double>& speedups, double p);

// Whether `dir` holds a session (its session.json and journal.jsonl): the check before a folder
// is deleted as one.
bool isSessionFolder(const std::filesystem::path& dir);

} // namespace ks
