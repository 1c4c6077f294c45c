#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ks {

// The language a candidate is written in. cuda and cpp compile to a shared library that exports
// ks_run (the C ABI of ks_task.h); python (PyTorch) and triton define run(...) over torch
// tensors and run in the Python runner (docs/languages.md).
enum class Language { Cuda, Cpp, Triton, Python };

std::string_view languageName(Language l); // "cuda", "cpp", "triton", "python"
std::optional<Language> parseLanguage(std::string_view name);
std::string languageNameList(); // "cuda, cpp, triton, python", for messages
// The file suffix of a candidate: ".cu", ".cpp", ".py".
std::string languageSuffix(Language l);
// Whether candidates run in the Python runner rather than as a compiled ks_run.
bool isPythonLanguage(Language l);

// The language of a source file by its suffix: .cu is cuda, .cpp/.cc/.cxx is cpp, .py is
// triton when the file imports triton and python otherwise; nullopt for anything else.
std::optional<Language> languageOfFile(const std::filesystem::path& file);

// The language a backend uses when none is named: cuda on "cuda", cpp on "host".
Language defaultLanguage(std::string_view backend);
// Why the language cannot run on the backend ("host" or "cuda"), or empty when it can: cuda and
// triton need the GPU, cpp is the host's compiled language, python runs on either.
std::string languageBackendProblem(Language l, std::string_view backend);

} // namespace ks
