#include "searchdocument.h"

#include <util/qtext.h>

#include <fstream>
#include <sstream>

namespace ks::ui {

namespace {

constexpr int kSnapshotEvery = 64;

} // namespace

QStringList nodesTouchedBy(const JournalEvent& e)
{
    QStringList ids;
    const auto editNodes = [&](const nlohmann::json& edit) {
        for (const char* list : {"update", "prune"})
            for (const auto& op : edit.value(list, nlohmann::json::array()))
                ids << q(op.value("node", std::string()));
    };
    if (const auto* call = std::get_if<ev::Exchange>(&e.body))
        ids << q(call->node);
    else if (const auto* edited = std::get_if<ev::TreeEdit>(&e.body)) {
        ids << q(edited->node.value_or(""));
        editNodes(edited->edit);
    } else if (const auto* rejected = std::get_if<ev::EditRejected>(&e.body))
        ids << q(rejected->node);
    else if (const auto* begun = std::get_if<ev::ActionStarted>(&e.body))
        ids << q(begun->node);
    else if (const auto* cand = std::get_if<ev::Candidate>(&e.body))
        ids << q(cand->node);
    else if (const auto* evaluated = std::get_if<ev::Evaluation>(&e.body))
        ids << q(evaluated->node);
    else if (const auto* ended = std::get_if<ev::ActionFinished>(&e.body))
        ids << q(ended->node);
    else if (const auto* human = std::get_if<ev::Human>(&e.body))
        ids << q(human->command.value("node", std::string()));
    ids.removeAll(QString());
    ids.removeDuplicates();
    return ids;
}

SearchDocument::SearchDocument(QObject* parent)
    : QObject(parent)
{
    qRegisterMetaType<ks::SearchEvent>();
}

void SearchDocument::setSession(const SessionConfig& config, const std::filesystem::path& dir, bool live)
{
    m_config = config;
    m_dir = dir;
    m_live = live;
    m_task = loadTask(config.taskDir).task;
    emit reset(); // views that depend on the task (the charts' workload axes) refresh
}

void SearchDocument::clear()
{
    m_events.clear();
    m_snapshots.clear();
    m_state = SearchState();
    m_shown = 0;
    m_bestNode.clear();
    m_dir.clear();
    m_live = false;
    emit reset();
    emit progressChanged();
}

void SearchDocument::load(std::vector<SearchEvent> events)
{
    m_events = std::move(events);
    m_snapshots.clear();
    m_state = SearchState();
    m_shown = 0;
    for (const SearchEvent& e : m_events) {
        m_state.apply(*e);
        if (++m_shown % kSnapshotEvery == 0)
            m_snapshots.emplace(m_shown, m_state);
    }
    updateBest();
    emit reset();
    emit progressChanged();
}

void SearchDocument::updateBest()
{
    const auto best = m_state.bestAttempt();
    m_bestNode = best ? m_state.tree.attempt(*best)->node : std::string();
}

void SearchDocument::append(const SearchEvent& event)
{
    const bool follow = atLatest();
    m_events.push_back(event);
    if (follow)
        applyShown(event);
}

void SearchDocument::applyShown(const SearchEvent& e)
{
    const int nodesBefore = m_state.tree.nodeCount();
    const std::size_t attemptsBefore = m_state.tree.attempts().size();
    m_state.apply(*e);
    ++m_shown; // no snapshot here: copying a large state on a live event stalls the window; scrubbing makes them
    QStringList inserted;
    for (int i = nodesBefore; i < m_state.tree.nodeCount(); ++i)
        inserted << q(m_state.tree.nodes()[static_cast<std::size_t>(i)].id);
    QStringList changed = nodesTouchedBy(*e);
    for (const QString& id : inserted) {
        changed.removeAll(id);
        const SearchNode* n = m_state.tree.find(id.toStdString());
        if (n && !changed.contains(q(n->parent)))
            changed << q(n->parent); // its list of children grew
    }
    if (!inserted.isEmpty())
        emit nodesInserted(inserted);
    if (!changed.isEmpty())
        emit nodesChanged(changed);
    if (m_state.tree.attempts().size() != attemptsBefore)
        updateBest();
    for (std::size_t i = attemptsBefore; i < m_state.tree.attempts().size(); ++i)
        emit attemptAdded(static_cast<int>(i));
    emit eventShown(e);
    emit progressChanged();
}

void SearchDocument::showUpTo(int count)
{
    count = std::clamp(count, 0, static_cast<int>(m_events.size()));
    if (count == m_shown)
        return;
    if (count > m_shown && count - m_shown <= 8) { // a small step forward: apply, views update in place
        while (m_shown < count)
            applyShown(m_events[static_cast<std::size_t>(m_shown)]);
        return;
    }
    auto it = m_snapshots.upper_bound(count);
    if (it != m_snapshots.begin() && !m_snapshots.empty()) {
        --it;
        m_state = it->second;
        m_shown = it->first;
    } else {
        m_state = SearchState();
        m_shown = 0;
    }
    while (m_shown < count) {
        m_state.apply(*m_events[static_cast<std::size_t>(m_shown++)]);
        if (m_shown % kSnapshotEvery == 0)
            m_snapshots.try_emplace(m_shown, m_state); // events only grow, so a snapshot stays valid
    }
    updateBest();
    emit reset();
    emit progressChanged();
}

std::string SearchDocument::programSource(const std::string& hash) const
{
    if (hash.empty() || m_dir.empty())
        return {};
    std::ifstream in(m_dir / "programs" / (hash + m_config.programSuffix()));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace ks::ui
