// What ssh adds to an evaluation (issue #14: under 0.3 s per evaluation on loopback). The same
// kernel is evaluated through two `ksearch worker`s of the same build, one started directly and
// one through ssh, in alternation so that both see the same machine load. Each worker reports
// its own time for the evaluation; what the caller waits beyond it is the transport's share.
//
//   ksearch_bench_ssh TASK_DIR KERNEL ROUNDS WORKLOAD "DIRECT COMMAND" "SSH COMMAND"
//
// bench/ssh_overhead.sh starts a private sshd on loopback and runs this; docs/perf.md keeps the table.

#include <task/task.h>

#include <QCoreApplication>
#include <QElapsedTimer>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include <workerclient.h>
#include <workerprotocol.h>

namespace {

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Samples {
    std::vector<double> wall, worker, transport;
};

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    if (argc != 7) {
        std::fprintf(stderr, "usage: %s TASK_DIR KERNEL ROUNDS WORKLOAD DIRECT_COMMAND SSH_COMMAND\n", argv[0]);
        return 2;
    }
    const auto loaded = ks::loadTask(argv[1]);
    if (!loaded.task) {
        std::fprintf(stderr, "%s: the task does not load\n", argv[1]);
        return 2;
    }
    const int rounds = std::max(1, std::atoi(argv[3]));
    const std::vector<std::pair<std::string, std::string>> workers {{"direct", argv[5]}, {"ssh", argv[6]}};
    std::vector<std::unique_ptr<ks::worker::WorkerClient>> clients;
    std::vector<double> startSeconds;
    for (const auto& [name, command] : workers) {
        ks::worker::WorkerClient::Options o;
        o.command = command;
        o.task = argv[1];
        o.taskDigest = ks::worker::taskDigest(*loaded.task);
        o.settings.seed = 20261204; // both workers judge on the same inputs
        o.settings.maxSeconds = 0.02;
        o.settings.workloads = {argv[4]};
        std::string error;
        QElapsedTimer started;
        started.start();
        auto client = ks::worker::WorkerClient::start(o, error);
        startSeconds.push_back(static_cast<double>(started.nsecsElapsed()) * 1e-9);
        if (!client) {
            std::fprintf(stderr, "%s worker: %s\n", name.c_str(), error.c_str());
            return 3;
        }
        clients.push_back(std::move(client));
    }
    // The first evaluation of each worker compiles and prepares the task: not counted.
    for (auto& c : clients)
        if (c->evaluate(argv[2]).status != ks::Verdict::Passed) {
            std::fprintf(stderr, "the kernel did not pass on a worker\n");
            return 3;
        }
    std::vector<Samples> samples(clients.size());
    for (int r = 0; r < rounds; ++r)
        for (std::size_t i = 0; i < clients.size(); ++i) {
            QElapsedTimer t;
            t.start();
            const ks::Evaluation e = clients[i]->evaluate(argv[2]);
            const double wall = static_cast<double>(t.nsecsElapsed()) * 1e-9;
            samples[i].wall.push_back(wall);
            samples[i].worker.push_back(e.totalSeconds);
            samples[i].transport.push_back(wall - e.totalSeconds);
        }
    std::printf("%d evaluations per worker (after one that compiled and prepared), medians in seconds\n\n", rounds);
    std::printf("| worker | start and hello (once) | caller waited | worker's own time | transport (waited - own) | "
                "max transport |\n");
    std::printf("|---|---:|---:|---:|---:|---:|\n");
    for (std::size_t i = 0; i < clients.size(); ++i)
        std::printf("| %s | %.3f | %.4f | %.4f | %.4f | %.4f |\n", workers[i].first.c_str(), startSeconds[i],
            median(samples[i].wall), median(samples[i].worker), median(samples[i].transport),
            *std::max_element(samples[i].transport.begin(), samples[i].transport.end()));
    std::printf("\nssh adds %.4f s per evaluation (median transport, ssh minus direct)\n",
        median(samples[1].transport) - median(samples[0].transport));
    return 0;
}
