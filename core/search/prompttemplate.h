#pragma once

#include <map>
#include <string>

namespace ks {

// A prompt template from resources/prompts (compiled in): plain text with {{name}} fields.
// Every field must be given, and every given value must be used, so a template and its caller
// cannot drift apart silently: a mismatch throws std::logic_error naming the field.
std::string renderPrompt(const std::string& templateName, const std::map<std::string, std::string>& fields);

// The raw template text (":/prompts/<name>.txt").
std::string promptTemplate(const std::string& templateName);

} // namespace ks
