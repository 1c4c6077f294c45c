#pragma once

// `ksearch-runner --compile DIR [--readable PATH | --hidden PATH]... -- PROGRAM ARGS...`: runs a compiler on a
// candidate's source under the confinement a candidate's process gets (confine.h), because the
// source is as untrusted as the program: `#include "/home/me/.ssh/id_ed25519"` or an assembler
// `.incbin` would copy a file of the user's into the compile log the code policy reads, or into
// the library. DIR, the compile's folder (the source, its include folder, the library), is the
// one writable place; the PATHs (the toolkits, include folders the flags name) stay readable
// where a hidden home covered them; the --hidden ones (the task's folder: its held-out workloads)
// are hidden as the homes are. Where the OS refuses part of it, the compiler runs with what
// could be had. Before the exec, DIR/compile-confinement.json says what that was
// ({"network", "processes", "filesystem"}); ksearch reads it (gpu/compiler.cpp).

namespace ksr {

// Never returns on success (the compiler replaces the process; the PID namespace's init passes
// its exit status up). The exit code for a usage error or a program that cannot be executed.
int runConfinedCompile(int argc, char** argv);

} // namespace ksr
