#include "journalevent.h"

#include <algorithm>
#include <iterator>

namespace ks {

namespace {

using json = nlohmann::json;

// Takes the modeled fields out of a copy of the line; what is left over becomes `extra`. The
// first field of the wrong type is the error.
class Reader
{
public:
    explicit Reader(json j)
        : m_rest(std::move(j))
    {
    }

    void take(const char* key, std::string& out) { get(key, out, &json::is_string); }
    // Required: a call, an edit or a refusal without a purpose says nothing the state can use
    // (read as the default, an edit would pass for the world model's first).
    void take(const char* key, Purpose& out)
    {
        std::string name;
        if (!m_rest.contains(key))
            return fail(key, "is missing");
        take(key, name);
        if (const auto p = parsePurpose(name))
            out = *p;
        else
            fail(key, "names no known purpose");
    }
    // A purpose, or "" for none.
    void take(const char* key, std::optional<Purpose>& out)
    {
        if (const auto it = m_rest.find(key); it != m_rest.end() && it->is_string() && it->get<std::string>().empty()) {
            m_rest.erase(it);
            return;
        }
        if (!m_rest.contains(key))
            return;
        Purpose p {};
        take(key, p);
        out = p;
    }
    void take(const char* key, bool& out) { get(key, out, &json::is_boolean); }
    void take(const char* key, double& out) { get(key, out, &json::is_number); }
    void take(const char* key, std::int64_t& out) { get(key, out, &json::is_number_integer); }
    void take(const char* key, int& out) { get(key, out, &json::is_number_integer); }
    void take(const char* key, std::vector<std::string>& out)
    {
        const auto it = m_rest.find(key);
        if (it == m_rest.end())
            return;
        if (!it->is_array() || !std::all_of(it->begin(), it->end(), [](const json& v) { return v.is_string(); }))
            return fail(key, "must be a list of strings");
        out = it->get<std::vector<std::string>>();
        m_rest.erase(it);
    }
    template<typename T> void take(const char* key, std::optional<T>& out)
    {
        if (!m_rest.contains(key))
            return;
        T value {};
        take(key, value);
        out = std::move(value);
    }
    // Any JSON value (objects the engine's own modules read: settings, edits, evaluations).
    void takeAny(const char* key, json& out)
    {
        if (const auto it = m_rest.find(key); it != m_rest.end()) {
            out = std::move(*it);
            m_rest.erase(it);
        }
    }
    void takeAny(const char* key, std::optional<json>& out)
    {
        if (const auto it = m_rest.find(key); it != m_rest.end()) {
            out = std::move(*it);
            m_rest.erase(it);
        }
    }
    json* sub(const char* key) // an object whose own fields are read next
    {
        const auto it = m_rest.find(key);
        return it != m_rest.end() && it->is_object() ? &*it : nullptr;
    }
    void drop(const char* key) { m_rest.erase(key); }

    json rest() { return std::move(m_rest); }
    [[nodiscard]] const std::string& error() const { return m_error; }

private:
    template<typename T> void get(const char* key, T& out, bool (json::*check)() const noexcept)
    {
        const auto it = m_rest.find(key);
        if (it == m_rest.end())
            return;
        if (!((*it).*check)())
            return fail(key, "has the wrong type");
        out = it->get<T>();
        m_rest.erase(it);
    }
    void fail(const char* key, const char* why)
    {
        if (m_error.empty())
            m_error = std::string("field '") + key + "' " + why;
    }

    json m_rest;
    std::string m_error;
};

// A program's prompt: only shown (in the log, the inspector), so a line without one (hand-made,
// as tests write them) reads as the code policy's first.
void takePrompt(Reader& r, Purpose& prompt)
{
    std::optional<Purpose> read;
    r.take("prompt", read);
    prompt = read.value_or(Purpose::Action);
}

template<typename T> void put(json& j, const char* key, const std::optional<T>& v)
{
    if (v)
        j[key] = *v;
}

void read(Reader& r, ev::RunStarted& e)
{
    r.take("resumed", e.resumed);
    r.takeAny("settings", e.settings);
    r.take("seed_program", e.seedProgram);
}

void write(json& j, const ev::RunStarted& e)
{
    j["resumed"] = e.resumed;
    put(j, "settings", e.settings);
    put(j, "seed_program", e.seedProgram);
}

void read(Reader& r, ev::Exchange& e)
{
    r.take("id", e.id);
    r.take("role", e.role);
    r.take("purpose", e.purpose);
    r.take("node", e.node);
    r.takeAny("messages", e.messages);
    r.take("text", e.text);
    r.take("model", e.model);
    if (json* usage = r.sub("usage")) {
        Reader u(*usage);
        u.take("prompt", e.promptTokens);
        u.take("completion", e.completionTokens);
        u.take("reasoning", e.reasoningTokens);
        if (u.error().empty() && u.rest().empty())
            r.drop("usage"); // otherwise also kept whole in `extra`, and written back from there
    }
    r.take("cost", e.costDollars);
    r.take("priced", e.priced);
    r.take("latency_s", e.latencySeconds);
    if (json* error = r.sub("error")) {
        Reader x(*error);
        ev::Exchange::Error err;
        x.take("kind", err.kind);
        x.take("message", err.message);
        e.error = err;
        if (x.error().empty() && x.rest().empty())
            r.drop("error"); // otherwise also kept whole in `extra`, and written back from there
    }
}

void write(json& j, const ev::Exchange& e)
{
    j["id"] = e.id;
    j["role"] = e.role;
    j["purpose"] = purposeName(e.purpose);
    j["node"] = e.node;
    j["messages"] = e.messages;
    j["text"] = e.text;
    j["model"] = e.model;
    if (!j.contains("usage"))
        j["usage"] = {{"prompt", e.promptTokens}, {"completion", e.completionTokens}, {"reasoning", e.reasoningTokens}};
    j["cost"] = e.costDollars;
    j["priced"] = e.priced;
    j["latency_s"] = e.latencySeconds;
    if (e.error && !j.contains("error"))
        j["error"] = {{"kind", e.error->kind}, {"message", e.error->message}};
}

void read(Reader& r, ev::TreeEdit& e)
{
    r.take("author", e.author);
    r.take("purpose", e.purpose);
    r.take("exchange", e.exchange);
    r.take("node", e.node);
    r.take("reasoning", e.reasoning);
    r.takeAny("edit", e.edit);
    r.takeAny("rules", e.rules);
    r.take("inserted", e.inserted);
    r.take("notes", e.notes);
    r.take("island", e.island);
}

void write(json& j, const ev::TreeEdit& e)
{
    j["author"] = e.author;
    j["purpose"] = purposeName(e.purpose);
    put(j, "exchange", e.exchange);
    put(j, "node", e.node);
    put(j, "reasoning", e.reasoning);
    j["edit"] = e.edit;
    j["rules"] = e.rules;
    j["inserted"] = e.inserted;
    put(j, "notes", e.notes);
    put(j, "island", e.island);
}

void read(Reader& r, ev::EditRejected& e)
{
    r.take("exchange", e.exchange);
    r.take("purpose", e.purpose);
    r.take("node", e.node);
    r.take("errors", e.errors);
    r.take("repair", e.repair);
    r.take("answer", e.answer);
}

void write(json& j, const ev::EditRejected& e)
{
    j["exchange"] = e.exchange;
    j["purpose"] = purposeName(e.purpose);
    j["node"] = e.node;
    j["errors"] = e.errors;
    j["repair"] = e.repair;
    j["answer"] = e.answer;
}

void read(Reader& r, ev::ActionStarted& e)
{
    r.take("node", e.node);
    r.take("reason", e.reason);
}

void write(json& j, const ev::ActionStarted& e)
{
    j["node"] = e.node;
    j["reason"] = e.reason;
}

void read(Reader& r, ev::Candidate& e)
{
    r.take("node", e.node);
    r.take("exchange", e.exchange);
    takePrompt(r, e.prompt);
    r.take("author", e.author);
    r.take("program", e.program);
    r.take("problem", e.problem);
}

void write(json& j, const ev::Candidate& e)
{
    j["node"] = e.node;
    put(j, "exchange", e.exchange);
    j["prompt"] = purposeName(e.prompt);
    j["author"] = e.author;
    put(j, "program", e.program);
    put(j, "problem", e.problem);
}

void read(Reader& r, ev::Evaluation& e)
{
    r.take("node", e.node);
    r.take("program", e.program);
    r.take("exchange", e.exchange);
    takePrompt(r, e.prompt);
    r.take("author", e.author);
    r.takeAny("evaluation", e.evaluation);
    r.take("worker", e.worker);
}

void write(json& j, const ev::Evaluation& e)
{
    j["node"] = e.node;
    j["program"] = e.program;
    j["exchange"] = e.exchange;
    j["prompt"] = purposeName(e.prompt);
    j["author"] = e.author;
    j["evaluation"] = e.evaluation;
    put(j, "worker", e.worker);
}

void read(Reader& r, ev::ActionFinished& e)
{
    r.take("node", e.node);
    r.takeAny("best_attempt", e.bestAttempt);
    r.take("outcome", e.outcome);
    r.take("next_planner", e.nextPlanner);
}

void write(json& j, const ev::ActionFinished& e)
{
    j["node"] = e.node;
    j["best_attempt"] = e.bestAttempt;
    j["outcome"] = e.outcome;
    j["next_planner"] = e.nextPlanner ? purposeName(*e.nextPlanner) : std::string_view();
}

void read(Reader& r, ev::Human& e)
{
    r.takeAny("command", e.command);
    r.take("description", e.description);
    r.take("program", e.program);
}

void write(json& j, const ev::Human& e)
{
    j["command"] = e.command;
    j["description"] = e.description;
    put(j, "program", e.program);
}

void read(Reader& r, ev::Paused& e)
{
    r.take("reason", e.reason);
}
void write(json& j, const ev::Paused& e)
{
    j["reason"] = e.reason;
}
void read(Reader& r, ev::RunFinished& e)
{
    r.take("reason", e.reason);
}
void write(json& j, const ev::RunFinished& e)
{
    j["reason"] = e.reason;
}
void read(Reader& /*r*/, ev::Note& /*e*/) { }
void write(json& /*j*/, const ev::Note& /*e*/) { }

// The journal's type names, in the order of EventBody's alternatives.
constexpr std::string_view kTypeNames[] = {"run_started", "exchange", "tree_edit", "edit_rejected", "action_started",
    "candidate", "evaluation", "action_finished", "human", "paused", "run_finished", "note"};
static_assert(std::size(kTypeNames) == std::variant_size_v<EventBody>);

template<std::size_t I = 0> std::optional<EventBody> bodyNamed(std::string_view name)
{
    if constexpr (I == std::variant_size_v<EventBody>) {
        return std::nullopt;
    } else {
        if (name == kTypeNames[I])
            return EventBody(std::in_place_index<I>);
        return bodyNamed<I + 1>(name);
    }
}

} // namespace

std::string_view eventTypeName(const EventBody& body)
{
    return kTypeNames[body.index()];
}

std::optional<JournalEvent> journalEventFromJson(const json& j, std::string& error)
{
    if (!j.is_object()) {
        error = "an event must be a JSON object";
        return std::nullopt;
    }
    Reader r(j);
    std::string type;
    r.take("type", type);
    auto body = bodyNamed(type);
    if (!body) {
        error = type.empty() ? "field 'type' is missing" : "unknown event type '" + type + "'";
        return std::nullopt;
    }
    JournalEvent e;
    e.body = std::move(*body);
    r.take("seq", e.seq);
    r.take("t", e.time);
    r.take("elapsed_s", e.elapsedSeconds);
    r.take("round", e.round);
    std::visit([&](auto& b) { read(r, b); }, e.body);
    if (!r.error().empty()) {
        error = type + ": " + r.error();
        return std::nullopt;
    }
    e.extra = r.rest();
    return e;
}

json toJson(const JournalEvent& e)
{
    json j = e.extra.is_object() ? e.extra : json::object();
    j["type"] = std::string(eventTypeName(e.body));
    put(j, "seq", e.seq);
    put(j, "t", e.time);
    put(j, "elapsed_s", e.elapsedSeconds);
    put(j, "round", e.round);
    std::visit([&](const auto& b) { write(j, b); }, e.body);
    return j;
}

} // namespace ks
