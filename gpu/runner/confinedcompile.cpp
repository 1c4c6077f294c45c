#include "confinedcompile.h"

#include "confine.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

namespace ksr {

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitCannotExecute = 127; // as a shell says of a program it cannot run

std::string canonical(const std::string& path)
{
    char real[PATH_MAX];
    return ::realpath(path.c_str(), real) ? std::string(real) : std::string();
}

} // namespace

int runConfinedCompile(int argc, char** argv)
{
    // argv: ksearch-runner --compile DIR [--readable PATH | --hidden PATH]... -- PROGRAM ARGS...
    constexpr const char* kUsage =
        "usage: ksearch-runner --compile DIR [--readable PATH | --hidden PATH]... -- PROGRAM ARGS...\n";
    if (argc < 5 || std::strcmp(argv[1], "--compile") != 0) {
        std::cerr << kUsage;
        return kExitUsage;
    }
    const std::string dir = canonical(argv[2]);
    std::vector<std::string> readable, hidden;
    int i = 3;
    for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2] != '\0'; i += 2) {
        const std::string path = canonical(argv[i + 1]); // one that does not exist has nothing to keep or hide
        if (std::strcmp(argv[i], "--readable") == 0 && !path.empty())
            readable.push_back(path);
        else if (std::strcmp(argv[i], "--hidden") == 0 && !path.empty())
            hidden.push_back(path);
        else if (std::strcmp(argv[i], "--readable") != 0 && std::strcmp(argv[i], "--hidden") != 0)
            break;
    }
    if (dir.empty() || i + 1 >= argc || std::strcmp(argv[i], "--") != 0) {
        std::cerr << kUsage;
        return kExitUsage;
    }
    char** program = argv + i + 1;
    // The host runner's order (main.cpp's prepareBackend and executeJob), from one thread.
    const bool network = isolateNetwork(true);
    const bool mounts = privateMountNamespace();
    const bool processes = containChildProcesses(); // from here on, the job's process only
    limitProcesses(0, processes);
    const bool filesystem = mounts && processes && confineFilesystem(dir, readable, kDefaultFileLimitBytes, hidden);
    limitResources(0, 0);
    if (mounts && processes) // the private /tmp, also where the rest fell short: the caller's may be hidden now
        ::setenv("TMPDIR", "/tmp", 1);
    {
        std::ofstream report(dir + "/compile-confinement.json", std::ios::trunc);
        report << R"({"network": )" << (network ? "true" : "false") << R"(, "processes": )"
               << (processes ? "true" : "false") << R"(, "filesystem": )" << (filesystem ? "true" : "false") << "}\n";
    }
    dropPrivileges();
    ::execvp(program[0], program);
    std::cerr << "cannot run " << program[0] << ": " << std::strerror(errno) << "\n";
    return kExitCannotExecute;
}

} // namespace ksr
