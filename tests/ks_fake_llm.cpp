// The scripted LLM as a program for the command provider: request JSON on stdin, a structured
// answer ({"text", "model", "usage"}) on stdout. KS_FAKE_LLM_MODE selects misbehaviours;
// KS_FAKE_LLM_LOG, when set, gets one line per request (role and first words), for tests that
// check which calls were made. KS_FAKE_LLM_HOLD, when set, names a file: while it exists, no call
// is answered (a call stays out for as long as a test needs, and ends only when it is cancelled).
#include "demollm.h"
#include "fakellm.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

int main()
{
    std::string input;
    for (std::string line; std::getline(std::cin, line);)
        input += line + "\n";
    nlohmann::json request;
    try {
        request = nlohmann::json::parse(input);
    } catch (const std::exception& e) {
        std::cerr << "ks_fake_llm: bad request: " << e.what() << "\n";
        return 2;
    }
    std::vector<std::pair<std::string, std::string>> messages;
    std::size_t promptChars = 0;
    for (const auto& m : request.value("messages", nlohmann::json::array())) {
        messages.push_back({m.value("role", std::string()), m.value("content", std::string())});
        promptChars += messages.back().second.size();
    }
    const char* mode = std::getenv("KS_FAKE_LLM_MODE");
    const std::string role = request.value("role", std::string());
    const std::string modeText = mode ? mode : "";
    const std::string text = modeText == "demo" ? ks::test::demoLlmAnswer(role, messages)
                                                : ks::test::fakeLlmAnswer(role, messages, modeText);
    if (const char* log = std::getenv("KS_FAKE_LLM_LOG"))
        std::ofstream(log, std::ios::app) << role << " " << messages.size() << "\n";
    const nlohmann::json answer {{"text", text}, {"model", request.value("model", std::string("fake"))},
        {"usage", {{"prompt_tokens", promptChars / 4}, {"completion_tokens", text.size() / 4}}}};
    if (const char* hold = std::getenv("KS_FAKE_LLM_HOLD"))
        while (std::filesystem::exists(hold))
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::cout << answer.dump() << std::endl;
    return 0;
}
