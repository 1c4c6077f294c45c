#pragma once

#include "sessionconfig.h"

#include <search/searchstate.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ks {

// What opening a session found in its journal.
struct JournalRecovery {
    int events = 0;
    bool droppedPartialLine = false; // the process died while writing the last line
    bool usedCheckpoint = false; // the state came from tree.json plus the events after it
};

// A search on disk: session.json, journal.jsonl (append-only, one JSON event per line, flushed
// after each), programs/<hash>.<cu|cpp>, and tree.json (a checkpoint of the state, replaced
// atomically). The journal is the truth: any state can be rebuilt by replaying it.
class Session
{
public:
    static std::unique_ptr<Session> create(
        const std::filesystem::path& dir, const SessionConfig& config, std::string& error);
    static std::unique_ptr<Session> open(const std::filesystem::path& dir, std::string& error);
    ~Session();

    const std::filesystem::path& dir() const { return m_dir; }
    const SessionConfig& config() const { return m_config; }

    // The journal's events in order. A torn last line (a crash mid-write) is dropped and reported;
    // a bad line anywhere else is an error naming the line.
    std::optional<std::vector<nlohmann::json>> readJournal(
        std::string& error, bool* droppedPartialLine = nullptr) const;
    bool append(const nlohmann::json& event, std::string& error);

    // Stores a program by content; returns its hash. Idempotent.
    std::string storeProgram(const std::string& source, std::string& error);
    std::string programSource(const std::string& hash) const;
    std::filesystem::path programPath(const std::string& hash) const;

    bool writeCheckpoint(const SearchState& state, std::string& error);
    // The current state: the checkpoint plus the events after it, or every event replayed when the
    // checkpoint is missing or does not match the journal. The writer that resumes the run passes
    // `forWriting`: a torn last line is then cut off the file (a reader must not touch it: the
    // line may be one a live run is writing).
    std::optional<SearchState> loadState(
        std::string& error, JournalRecovery* recovery = nullptr, bool forWriting = false);

private:
    Session(std::filesystem::path dir, SessionConfig config);
    bool openJournalForAppend(std::string& error);

    std::filesystem::path m_dir;
    SessionConfig m_config;
    std::FILE* m_journal = nullptr;
};

// sha-256 of a program's text, the first 16 hex digits.
std::string programHash(const std::string& source);

// Writes a file by way of a temporary and a rename, so readers see the old or the new content.
bool writeFileAtomically(const std::filesystem::path& path, const std::string& content, std::string& error);

} // namespace ks
