// An LLM's answer of any bytes: the world model's JSON edit and the code policy's program are
// looked for in it; never a crash or a hang.
#include <search/answerparsing.h>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string answer(reinterpret_cast<const char*>(data), size);
    std::string problem;
    (void)ks::extractJsonObject(answer, problem);
    (void)ks::extractProgram(answer, problem);
    return 0;
}
