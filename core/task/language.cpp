#include "language.h"

#include <array>
#include <fstream>
#include <sstream>

namespace ks {

namespace {

constexpr std::array kAll {Language::Cuda, Language::Cpp, Language::Triton, Language::Python};

} // namespace

std::string_view languageName(Language l)
{
    switch (l) {
    case Language::Cuda:
        return "cuda";
    case Language::Cpp:
        return "cpp";
    case Language::Triton:
        return "triton";
    case Language::Python:
        return "python";
    }
    return "cuda";
}

std::optional<Language> parseLanguage(std::string_view name)
{
    for (const Language l : kAll)
        if (name == languageName(l))
            return l;
    return std::nullopt;
}

std::string languageNameList()
{
    std::string out;
    for (const Language l : kAll)
        out += (out.empty() ? "" : ", ") + std::string(languageName(l));
    return out;
}

std::string languageSuffix(Language l)
{
    switch (l) {
    case Language::Cuda:
        return ".cu";
    case Language::Cpp:
        return ".cpp";
    case Language::Triton:
    case Language::Python:
        return ".py";
    }
    return ".cu";
}

bool isPythonLanguage(Language l)
{
    return l == Language::Triton || l == Language::Python;
}

std::optional<Language> languageOfFile(const std::filesystem::path& file)
{
    const std::string ext = file.extension().string();
    if (ext == ".cu")
        return Language::Cuda;
    if (ext == ".cpp" || ext == ".cc" || ext == ".cxx")
        return Language::Cpp;
    if (ext != ".py")
        return std::nullopt;
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string first;
        std::string second;
        words >> first >> second;
        if ((first == "import" || first == "from") && (second == "triton" || second.rfind("triton.", 0) == 0))
            return Language::Triton;
    }
    return Language::Python;
}

Language defaultLanguage(std::string_view backend)
{
    return backend == "host" ? Language::Cpp : Language::Cuda;
}

std::string languageBackendProblem(Language l, std::string_view backend)
{
    if ((l == Language::Cuda || l == Language::Triton) && backend != "cuda")
        return std::string(languageName(l)) + " candidates run on the GPU: use the cuda backend";
    if (l == Language::Cpp && backend != "host")
        return "cpp candidates run on the host CPU: use the host backend (or cuda for .cu files)";
    return {};
}

} // namespace ks
