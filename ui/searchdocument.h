#pragma once

#include <search/engine.h>
#include <search/searchstate.h>
#include <session/sessionconfig.h>
#include <task/task.h>

#include <QObject>
#include <QStringList>

#include <map>
#include <vector>

namespace ks::ui {

// The window's copy of a search: the events it has seen and the state they make, rebuilt by the
// same reducer the engine uses. Fed live by the engine (queued signals) or all at once from a
// session's journal; `showUpTo` replays the first N events for the history slider. Tells its
// views which nodes and attempts changed, so they update only those.
class SearchDocument : public QObject
{
    Q_OBJECT
public:
    explicit SearchDocument(QObject* parent = nullptr);

    void setSession(const SessionConfig& config, const std::filesystem::path& dir, bool live);
    const SessionConfig& config() const { return m_config; }
    const std::filesystem::path& sessionDir() const { return m_dir; }
    bool isLive() const { return m_live; }
    bool hasSession() const { return !m_dir.empty(); }
    // The session's task, when its folder can still be loaded (workload labels, prompts).
    const Task* task() const { return m_task ? &*m_task : nullptr; }

    // Every event known, and the state after the first `shown()` of them.
    const std::vector<SearchEvent>& events() const { return m_events; }
    const SearchState& state() const { return m_state; }
    int shown() const { return m_shown; }
    bool atLatest() const { return m_shown == static_cast<int>(m_events.size()); }
    // The node of the best attempt in the state shown (empty: none), kept current as events apply.
    const std::string& bestNode() const { return m_bestNode; }

    // Replaces everything with these events (a session opened from disk).
    void load(std::vector<SearchEvent> events);
    // One more event; shown at once unless the view is replaying an earlier point.
    void append(const SearchEvent& event);
    // Shows the state after the first `count` events (0 .. events().size()).
    void showUpTo(int count);
    void clear();

    // The program text of a stored program, for the inspector and the diff.
    std::string programSource(const std::string& hash) const;

signals:
    void reset(); // everything changed (a load or a jump back in history)
    void nodesInserted(const QStringList& ids); // appended to the tree, in creation order
    void nodesChanged(const QStringList& ids);
    void attemptAdded(int index);
    void eventShown(const ks::SearchEvent& event); // after the state includes it
    void progressChanged(); // counts, usage, time: the status bar

private:
    void applyShown(const SearchEvent& e);

    SessionConfig m_config;
    std::optional<Task> m_task;
    std::filesystem::path m_dir;
    bool m_live = false;
    std::vector<SearchEvent> m_events;
    SearchState m_state;
    int m_shown = 0;
    std::string m_bestNode;
    void updateBest();
    std::map<int, SearchState> m_snapshots; // every kSnapshotEvery events, for fast scrubbing
};

// The nodes an event touches (created, edited, started, closed, evaluated under).
QStringList nodesTouchedBy(const JournalEvent& event);

} // namespace ks::ui
