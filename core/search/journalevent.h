#pragma once

#include <tree/purpose.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ks {

// The journal's vocabulary: every event a search records, as a typed value. One line of
// session/journal.jsonl is one JournalEvent; journalEventFromJson and toJson convert exactly, so
// toJson(journalEventFromJson(line)) is the line again, field for field. A field this version
// does not know is kept in `extra` and written back, so that an older build does not drop what a
// newer one wrote. Optional members are the fields that some events of a type carry and others
// do not (a candidate has a program or a problem; a human's candidate has no exchange).
namespace ev {

struct RunStarted {
    bool resumed = false;
    std::optional<nlohmann::json> settings {}; // SearchSettings::toJson, on a new run only
    std::optional<std::string> seedProgram {}; // hash of the program a new run starts from
};

// One LLM call: what was sent, what came back, its cost.
struct Exchange {
    std::string id {}; // "x1", "x2", ...
    std::string role {}; // planner | coder
    Purpose purpose = Purpose::Init;
    std::string node {};
    nlohmann::json messages = nlohmann::json::array(); // [{role, content}]
    std::string text {}; // the answer, secrets redacted
    std::string model {};
    std::int64_t promptTokens = 0;
    std::int64_t completionTokens = 0;
    std::int64_t reasoningTokens = 0;
    double costDollars = 0.0;
    bool priced = false;
    double latencySeconds = 0.0;
    struct Error {
        std::string kind {}; // errorKindName
        std::string message {};
    };
    std::optional<Error> error {};
};

struct TreeEdit {
    std::string author {}; // world_model | system | human
    Purpose purpose = Purpose::Init;
    std::optional<std::string> exchange {};
    std::optional<std::string> node {};
    std::optional<std::string> reasoning {};
    nlohmann::json edit = nlohmann::json::object(); // treeedit.h's toJson
    nlohmann::json rules = nlohmann::json::object(); // editRulesJson
    std::vector<std::string> inserted {}; // ids the inserts got
    std::optional<std::vector<std::string>> notes {};
    std::optional<int> island {}; // evolve: the island a proposal belongs to
};

struct EditRejected {
    std::string exchange {};
    Purpose purpose = Purpose::Init;
    std::string node {};
    std::vector<std::string> errors {};
    bool repair = false; // the world model is asked once more
    std::string answer {};
};

struct ActionStarted {
    std::string node {};
    std::string reason {};
};

// An answer of the code policy (or a person's program, or the seed) before its evaluation.
struct Candidate {
    std::string node {};
    std::optional<std::string> exchange {};
    Purpose prompt = Purpose::Action; // the code policy's prompt, or Human or Seed
    std::string author {};
    std::optional<std::string> program {}; // hash, when the answer held a program
    std::optional<std::string> problem {}; // why it did not
};

struct Evaluation {
    std::string node {};
    std::string program {};
    std::string exchange {}; // empty for programs no LLM wrote
    Purpose prompt = Purpose::Action;
    std::string author {};
    nlohmann::json evaluation = nlohmann::json::object(); // evaluation.h's toJson
    std::optional<std::string> worker {}; // the evaluator that ran it, when the search had several
};

struct ActionFinished {
    std::string node {};
    nlohmann::json bestAttempt; // an attempt index, or null
    std::string outcome {}; // passed | failed
    std::optional<Purpose> nextPlanner {}; // the planner call due next ("" in the journal when none)
};

struct Human {
    nlohmann::json command = nlohmann::json::object(); // HumanCommand::toJson
    std::string description {};
    std::optional<std::string> program {}; // hash of the program an Evaluate command brought
};

struct Paused {
    std::string reason {};
};

struct RunFinished {
    std::string reason {};
};

struct Note { // free text a tool added; the reducer ignores it
};

} // namespace ev

using EventBody = std::variant<ev::RunStarted, ev::Exchange, ev::TreeEdit, ev::EditRejected, ev::ActionStarted,
    ev::Candidate, ev::Evaluation, ev::ActionFinished, ev::Human, ev::Paused, ev::RunFinished, ev::Note>;

struct JournalEvent {
    std::optional<int> seq {}; // 1, 2, ... in journal order
    std::optional<std::string> time {}; // "t": UTC, ISO 8601 with milliseconds
    std::optional<double> elapsedSeconds {}; // running time of the search when it was recorded
    std::optional<int> round {}; // evaluations before it
    EventBody body;
    nlohmann::json extra = nlohmann::json::object(); // fields this version does not model
};

// The journal's name of a body's type ("run_started", "exchange", ...).
std::string_view eventTypeName(const EventBody& body);

// nullopt with `error` naming the field for a line that is not an event this version knows.
std::optional<JournalEvent> journalEventFromJson(const nlohmann::json& j, std::string& error);
nlohmann::json toJson(const JournalEvent& e);

} // namespace ks
