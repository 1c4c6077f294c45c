#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ks::test {

// A scripted stand-in for the LLM, deterministic in the request alone (so a resumed run gets
// the answers the first run would have got). It plays both roles on the "scale" test task:
// intents carry markers ([[plain]], [[fast]], [[slow]], [[broken]]) that decide the program the
// coder writes, whose speed is set by a number of passes over the data (baseline 8, plain 4,
// fast 1, slow 32: far enough apart that host timing noise never reorders them).
// `mode` is a comma-separated list of misbehaviours:
//   malformed_init  the first init answer is prose without JSON (the repair succeeds)
//   invalid_update  the first update answer has V outside [0, 1] and no child (the repair succeeds)
//   nocode_broken   the first attempt at a [[broken]] intent has no code block
//   garbage         every planner answer is prose (repairs fail too)
std::string fakeLlmAnswer(
    const std::string& role, const std::vector<std::pair<std::string, std::string>>& messages, const std::string& mode);

// The program the fake coder writes for a number of passes (0: one that does not compile).
std::string scaleKernel(int passes);

} // namespace ks::test
