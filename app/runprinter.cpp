#include "runprinter.h"

#include <session/runsummary.h>
#include <util/numberformat.h>
#include <util/qtext.h>

namespace ks::cli {

namespace {

QString cut(const std::string& s, int n)
{
    QString t = q(s).simplified();
    return t.size() > n ? t.left(n - 3) + u"..." : t;
}

} // namespace

RunPrinter::RunPrinter(const Task& task, QTextStream& out, bool quiet)
    : m_task(task)
    , m_out(out)
    , m_quiet(quiet)
{
}

void RunPrinter::onEvent(const SearchState& s, const JournalEvent& e)
{
    if (m_quiet)
        return;
    if (const auto* evaluated = std::get_if<ev::Evaluation>(&e.body)) {
        const Attempt& a = s.tree.attempts().back();
        const RoleUsage total = summarize(s).totalUsage;
        m_out << QStringLiteral("round %1/%2  %3  attempt %4 (%5)  %6  J %7  best %8  tokens %9  %10%11\n")
                     .arg(s.evaluations, 3)
                     .arg(s.settings.budget)
                     .arg(q(a.node), -5)
                     .arg(a.index)
                     .arg(q(purposeName(a.promptKind)))
                     .arg(q(std::string(verdictName(a.evaluation.status))), -19)
                     .arg(q(formatScore(a.score())), 6)
                     .arg(q(formatScore(s.bestScore())), 6)
                     .arg(q(formatTokens(total.tokens.promptTokens + total.tokens.completionTokens)))
                     .arg(q(formatDollars(total.dollars)))
                     .arg(evaluated->worker ? u"  on "_qs + cut(*evaluated->worker, 40) : QString());
    } else if (const auto* begun = std::get_if<ev::ActionStarted>(&e.body)) {
        const SearchNode* n = s.tree.find(begun->node);
        m_out << "action " << q(n->id) << " (V " << q(formatPriority(n->value())) << "): " << cut(n->intent, 90)
              << "\n";
    } else if (const auto* edited = std::get_if<ev::TreeEdit>(&e.body)) {
        QStringList parts;
        for (const auto& id : edited->inserted)
            if (const SearchNode* n = s.tree.find(id))
                parts << QStringLiteral("+%1 under %2 (V %3) %4")
                             .arg(q(id), q(n->parent), q(formatPriority(n->value())), cut(n->intent, 60));
        for (const auto& u : edited->edit.value("update", nlohmann::json::array()))
            parts << QStringLiteral("V %1 -> %2")
                         .arg(q(u.value("node", std::string())), q(formatPriority(u.value("priority", 0.0))));
        for (const auto& p : edited->edit.value("prune", nlohmann::json::array()))
            parts << QStringLiteral("pruned %1").arg(q(p.value("node", std::string())));
        m_out << "  " << q(edited->author) << ": " << parts.join(u"; ") << "\n";
    } else if (const auto* rejected = std::get_if<ev::EditRejected>(&e.body)) {
        m_out << "  world model answer refused" << (rejected->repair ? " (asking once more)" : "") << ": "
              << cut(rejected->errors.empty() ? std::string() : rejected->errors.front(), 120) << "\n";
    } else if (const auto* cand = std::get_if<ev::Candidate>(&e.body); cand && cand->problem) {
        m_out << QStringLiteral("round %1/%2  %3  no program: %4\n")
                     .arg(s.evaluations, 3)
                     .arg(s.settings.budget)
                     .arg(q(cand->node), -5)
                     .arg(cut(*cand->problem, 100));
    } else if (const auto* human = std::get_if<ev::Human>(&e.body)) {
        m_out << "  person: " << q(human->description) << "\n";
    } else if (const auto* paused = std::get_if<ev::Paused>(&e.body)) {
        m_out << "paused: " << q(paused->reason) << "\n";
    }
    m_out.flush();
}

void RunPrinter::printSummary(const SearchState& s, const std::filesystem::path& sessionDir)
{
    const RunSummary r = summarize(s);
    m_out << "\n"
          << (r.finishedReason.empty() ? QStringLiteral("Not finished") : u"Finished: "_qs + q(r.finishedReason))
          << "\n";
    if (r.best) {
        const Attempt& a = *s.tree.attempt(*r.best);
        m_out << "Best J " << q(formatScore(r.bestScore)) << " (node " << q(a.node) << ", attempt " << a.index
              << ", round " << a.round << ", latency " << q(formatMicros(a.evaluation.latencyMicros))
              << " us vs baseline " << q(formatMicros(a.evaluation.baselineLatencyMicros)) << " us)\n";
    } else {
        m_out << "No candidate passed.\n";
    }
    m_out << "Evaluations: " << r.evaluations << " of " << r.budget << " (";
    QStringList verdicts;
    for (const auto& [name, count] : r.verdicts)
        verdicts << QStringLiteral("%1 %2").arg(q(name)).arg(count);
    m_out << verdicts.join(u", ") << ")\n";
    m_out << "Tree: " << r.nodes << " nodes (" << r.openNodes << " open, " << r.closedNodes << " closed, "
          << r.prunedNodes << " pruned)\n\n";
    m_out << QStringLiteral("%1 %2 %3 %4 %5 %6 %7\n")
                 .arg(u"LLM ROLE"_qs, -10)
                 .arg(u"CALLS"_qs, 6)
                 .arg(u"PROMPT"_qs, 9)
                 .arg(u"COMPLETION"_qs, 11)
                 .arg(u"REASONING"_qs, 10)
                 .arg(u"DOLLARS"_qs, 10)
                 .arg(u"SECONDS"_qs, 8);
    auto row = [&](const QString& role, const RoleUsage& u) {
        m_out << QStringLiteral("%1 %2 %3 %4 %5 %6 %7\n")
                     .arg(role, -10)
                     .arg(u.calls, 6)
                     .arg(q(formatTokens(u.tokens.promptTokens)), 9)
                     .arg(q(formatTokens(u.tokens.completionTokens)), 11)
                     .arg(q(formatTokens(u.tokens.reasoningTokens)), 10)
                     .arg(q(formatDollars(u.dollars)) + (u.unpricedCalls ? u"*"_qs : u" "_qs), 10)
                     .arg(q(formatFixed(u.latencySeconds, 1)), 8);
    };
    for (const auto& [role, u] : r.usage)
        row(q(role), u);
    row(u"total"_qs, r.totalUsage);
    if (r.totalUsage.unpricedCalls)
        m_out << "* " << r.totalUsage.unpricedCalls << " call(s) to models without a price: not counted in dollars\n";
    m_out << "\nTime: LLM " << q(formatFixed(r.llmSeconds, 1)) << " s, compile " << q(formatFixed(r.compileSeconds, 1))
          << " s, evaluation " << q(formatFixed(r.evaluatorSeconds, 1)) << " s (timed loops "
          << q(formatFixed(r.timedSeconds, 1)) << " s), run " << q(formatFixed(r.elapsedSeconds, 1)) << " s\n";
    m_out << "Session: " << q(sessionDir.string()) << "\n";
    m_out.flush();
    (void)m_task;
}

} // namespace ks::cli
