#pragma once

namespace ks::exitcode {
constexpr int Success = 0;
constexpr int Failure = 1; // the command ran and found a problem that is not the user's input
constexpr int InvalidInput = 2; // usage errors and malformed files, with the file and field named
constexpr int Environment = 3; // missing toolkit, compiler, runner or GPU
} // namespace ks::exitcode
