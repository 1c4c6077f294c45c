#include "session.h"

#include <QCryptographicHash>
#include <QSaveFile>

#include <fstream>
#include <sstream>

namespace ks {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kJournal = "journal.jsonl";
constexpr const char* kConfig = "session.json";
constexpr const char* kCheckpoint = "tree.json";

std::string readAll(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

std::string programHash(const std::string& source)
{
    return QCryptographicHash::hash(QByteArray::fromStdString(source), QCryptographicHash::Sha256)
        .toHex()
        .left(16)
        .toStdString();
}

bool writeFileAtomically(const fs::path& path, const std::string& content, std::string& error)
{
    QSaveFile f(QString::fromStdString(path.string()));
    if (!f.open(QIODevice::WriteOnly) || f.write(content.data(), static_cast<qint64>(content.size())) < 0
        || !f.commit()) {
        error = path.string() + ": cannot write: " + f.errorString().toStdString();
        return false;
    }
    return true;
}

Session::Session(fs::path dir, SessionConfig config)
    : m_dir(std::move(dir))
    , m_config(std::move(config))
{
}

Session::~Session()
{
    if (m_journal)
        std::fclose(m_journal);
}

std::unique_ptr<Session> Session::create(const fs::path& dir, const SessionConfig& config, std::string& error)
{
    std::error_code ec;
    if (fs::exists(dir / kConfig, ec)) {
        error = dir.string() + ": already holds a session (use --resume to continue it)";
        return nullptr;
    }
    fs::create_directories(dir / "programs", ec);
    if (ec) {
        error = dir.string() + ": cannot create: " + ec.message();
        return nullptr;
    }
    std::unique_ptr<Session> s(new Session(fs::absolute(dir), config));
    if (!writeFileAtomically(dir / kConfig, config.toJson().dump(2) + "\n", error) || !s->openJournalForAppend(error))
        return nullptr;
    return s;
}

std::unique_ptr<Session> Session::open(const fs::path& dir, std::string& error)
{
    const fs::path configPath = dir / kConfig;
    if (!fs::exists(configPath)) {
        error = dir.string() + ": no session here (no session.json)";
        return nullptr;
    }
    json j;
    try {
        j = json::parse(readAll(configPath));
    } catch (const json::exception& e) {
        error = configPath.string() + ": " + e.what();
        return nullptr;
    }
    auto config = SessionConfig::fromJson(j, error);
    if (!config) {
        error = configPath.string() + ": " + error;
        return nullptr;
    }
    if (config->taskDir.is_relative()) // a session that travels with its task (the bundled example)
        config->taskDir = fs::absolute(dir) / config->taskDir;
    std::unique_ptr<Session> s(new Session(fs::absolute(dir), *config));
    std::error_code ec;
    fs::create_directories(dir / "programs", ec); // a read-only copy (the installed example) has it already
    return s;
}

bool Session::openJournalForAppend(std::string& error)
{
    if (m_journal)
        return true;
    m_journal = std::fopen((m_dir / kJournal).c_str(), "ab");
    if (!m_journal)
        error = (m_dir / kJournal).string() + ": cannot open for writing";
    return m_journal != nullptr;
}

std::optional<std::vector<json>> Session::readJournal(std::string& error, bool* droppedPartialLine) const
{
    const fs::path path = m_dir / kJournal;
    const std::string text = fs::exists(path) ? readAll(path) : std::string();
    std::vector<json> events;
    std::size_t pos = 0;
    int line = 0;
    while (pos < text.size()) {
        const std::size_t end = text.find('\n', pos);
        const bool complete = end != std::string::npos;
        const std::string body = text.substr(pos, complete ? end - pos : std::string::npos);
        ++line;
        try {
            if (!complete)
                throw std::runtime_error("no newline");
            events.push_back(json::parse(body));
        } catch (const std::exception& e) {
            const bool last = !complete || end + 1 >= text.size();
            if (!last) {
                error = path.string() + ":" + std::to_string(line) + ": not a JSON event (" + e.what() + ")";
                return std::nullopt;
            }
            if (droppedPartialLine)
                *droppedPartialLine = true; // the writer died mid-line: the event never happened
            break;
        }
        pos = complete ? end + 1 : text.size();
    }
    return events;
}

bool Session::append(const json& event, std::string& error)
{
    if (!openJournalForAppend(error))
        return false;
    const std::string line = event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    if (std::fwrite(line.data(), 1, line.size(), m_journal) != line.size() || std::fflush(m_journal) != 0) {
        error = (m_dir / kJournal).string() + ": write failed (disk full?)";
        return false;
    }
    return true;
}

std::string Session::storeProgram(const std::string& source, std::string& error)
{
    const std::string hash = programHash(source);
    const fs::path p = programPath(hash);
    if (!fs::exists(p) && !writeFileAtomically(p, source, error))
        return {};
    return hash;
}

fs::path Session::programPath(const std::string& hash) const
{
    return m_dir / "programs" / (hash + m_config.programSuffix());
}

std::string Session::programSource(const std::string& hash) const
{
    return hash.empty() ? std::string() : readAll(programPath(hash));
}

bool Session::writeCheckpoint(const SearchState& state, std::string& error)
{
    return writeFileAtomically(m_dir / kCheckpoint, state.toJson().dump() + "\n", error);
}

std::optional<SearchState> Session::loadState(std::string& error, JournalRecovery* recovery, bool forWriting)
{
    bool dropped = false;
    auto events = readJournal(error, &dropped);
    if (!events)
        return std::nullopt;
    if (dropped && forWriting) { // cut the torn line off, so that the next event starts on a line of its own
        const std::string text = readAll(m_dir / kJournal);
        const std::size_t lastNewline = text.rfind('\n');
        fs::resize_file(m_dir / kJournal, lastNewline == std::string::npos ? 0 : lastNewline + 1);
    }
    if (recovery) {
        recovery->events = static_cast<int>(events->size());
        recovery->droppedPartialLine = dropped;
    }
    SearchState state;
    std::size_t from = 0;
    try {
        const json checkpoint = json::parse(readAll(m_dir / kCheckpoint));
        std::string ignored;
        auto saved = SearchState::fromJson(checkpoint, ignored);
        // Usable only if the journal reaches it: a checkpoint ahead of the journal is stale.
        if (saved && saved->seq <= static_cast<int>(events->size()) && saved->seq > 0
            && (*events)[saved->seq - 1].value("seq", 0) == saved->seq) {
            state = std::move(*saved);
            from = static_cast<std::size_t>(state.seq);
            if (recovery)
                recovery->usedCheckpoint = true;
        }
    } catch (const std::exception&) {
        // no checkpoint, or a broken one: replay everything
    }
    try {
        for (std::size_t i = from; i < events->size(); ++i)
            state.apply((*events)[i]);
    } catch (const std::exception& e) {
        error = (m_dir / kJournal).string() + ": " + e.what();
        return std::nullopt;
    }
    // The exchanges live only in the journal; a state built from a checkpoint still shows them.
    for (std::size_t i = 0; i < from; ++i)
        if ((*events)[i].value("type", std::string()) == "exchange")
            state.exchanges[(*events)[i].value("id", std::string())] = std::make_shared<const json>((*events)[i]);
    return state;
}

} // namespace ks
