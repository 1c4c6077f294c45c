#include "promptbuilder.h"

#include "prompttemplate.h"
#include "strategy.h"
#include "taskbrief.h"

#include <tree/treerender.h>
#include <util/numberformat.h>

#include <cstdio>

namespace ks {

namespace {

QList<ChatMessage> toMessages(const std::string& system, const std::string& user)
{
    return {{u"system"_qs, QString::fromStdString(system)}, {u"user"_qs, QString::fromStdString(user)}};
}

} // namespace

PromptBuilder::PromptBuilder(const Task& task, TargetInfo target, ProgramSource programs)
    : m_task(task)
    , m_target(std::move(target))
    , m_programs(std::move(programs))
    , m_taskFull(describeTask(task, true, m_target.language))
    , m_taskShort(describeTask(task, false, m_target.language))
{
}

std::string PromptBuilder::programBlock(const std::string& title, const Attempt& a) const
{
    const std::string fence = isPythonLanguage(m_target.language) ? "python" : m_target.cuda ? "cuda" : "cpp";
    return title + "\n```" + fence + "\n" + m_programs(a.program) + "\n```";
}

std::string PromptBuilder::outcome(const SearchState& s, const SearchNode& n, bool passed) const
{
    std::string text = "Attempts under " + n.id + ":\n";
    for (int i : n.attempts) {
        const Attempt& a = *s.tree.attempt(i);
        text += "  attempt " + std::to_string(a.index) + " (" + std::string(purposeName(a.promptKind))
            + "): " + (a.evaluated ? std::string(verdictName(a.evaluation.status)) : "no program: " + a.problem)
            + (a.passed() ? ", J " + formatFixed(a.score(), 1) : "") + "\n";
    }
    const Attempt* shown = nullptr;
    if (passed && n.bestAttempt)
        shown = s.tree.attempt(*n.bestAttempt);
    else if (!n.attempts.empty())
        shown = s.tree.attempt(n.attempts.back());
    if (shown)
        text += (passed ? "The best attempt in detail:\n" : "The last attempt in detail:\n")
            + describeAttempt(m_task, *shown, 1500);
    return text;
}

std::string PromptBuilder::plannerPrompt(const SearchState& s, const PlannerTask& t) const
{
    const std::string maxNew = std::to_string(s.settings.maxNewNodes);
    const std::string targets = baselineTargets(m_task, s);
    const std::string taskText =
        m_taskFull + "\nTarget: " + m_target.description + ", compiled with " + m_target.compiler;
    TreeRenderOptions ro;
    ro.budget = s.settings.treeBudget;
    ro.focus = t.node;
    if (t.purpose == Purpose::Init) {
        std::string seed;
        if (s.tree.root().bestAttempt)
            seed = programBlock("The seed program (the root's program; intents under the root start from it), which "
                                "scored:\n"
                    + describeAttempt(m_task, *s.tree.attempt(*s.tree.root().bestAttempt)),
                *s.tree.attempt(*s.tree.root().bestAttempt));
        else
            seed = "There is no program yet: intents under the root start from the task description alone.";
        return renderPrompt(
            "planner_init", {{"task", taskText}, {"targets", targets}, {"seed", seed}, {"max_new_nodes", maxNew}});
    }
    if (t.purpose == Purpose::Fill)
        return renderPrompt("planner_fill",
            {{"task", m_taskShort}, {"targets", targets}, {"tree", renderTreeForPrompt(s.tree, ro)},
                {"max_new_nodes", maxNew}});
    const SearchNode* n = s.tree.find(t.node);
    if (!n)
        return "The node " + t.node + " is gone.";
    const bool passed = t.purpose == Purpose::Update;
    std::map<std::string, std::string> fields {{"task", m_taskShort}, {"targets", targets},
        {"tree", renderTreeForPrompt(s.tree, ro)}, {"node", n->id}, {"intent", n->intent},
        {"value", formatFixed(n->value(), 2)}, {"outcome", outcome(s, *n, passed)}};
    if (!passed)
        fields["attempts"] = std::to_string(n->attempts.size());
    return renderPrompt(passed ? "planner_update" : "planner_too_hard", fields);
}

QList<ChatMessage> PromptBuilder::planner(const SearchState& s, const PlannerTask& t) const
{
    const std::string system =
        renderPrompt("planner_system", {{"max_new_nodes", std::to_string(s.settings.maxNewNodes)}});
    QList<ChatMessage> messages = toMessages(system, plannerPrompt(s, t));
    if (t.repair) {
        std::string errors;
        for (const auto& e : t.errors)
            errors += "- " + e + "\n";
        messages.append({u"assistant"_qs, QString::fromStdString(t.previousAnswer)});
        messages.append({u"user"_qs, QString::fromStdString(renderPrompt("planner_repair", {{"errors", errors}}))});
    }
    return messages;
}

QList<ChatMessage> PromptBuilder::coder(const SearchState& s, Purpose kind, const std::string& nodeId) const
{
    const std::string workspace = m_task.definition.workspaceBytes == "0"
        ? std::string("this task provides none")
        : "this task provides " + m_task.definition.workspaceBytes + " bytes";
    const std::string system = isPythonLanguage(m_target.language)
        ? renderPrompt("coder_system_python",
            {{"compiler", m_target.compiler}, {"target", m_target.description},
                {"language", m_target.language == Language::Triton ? "Triton" : "PyTorch"},
                {"language_rule",
                    m_target.language == Language::Triton
                        ? "do the work in Triton kernels (@triton.jit, launched from run); torch is for glue only "
                          "(views, allocating scratch tensors);"
                        : "use PyTorch operations (torch, torch.nn.functional); no compiled extensions;"},
                {"stream_rule",
                    m_target.cuda ? "launch all GPU work on the current stream (torch.cuda.current_stream()) and "
                                    "never synchronise: work on other streams is timed all the same;"
                                  : "run on the calling thread; tensors are on the CPU;"}})
        : renderPrompt("coder_system",
            {{"compiler", m_target.compiler}, {"target", m_target.description}, {"workspace", workspace},
                {"stream_rule",
                    m_target.cuda ? "launch all GPU work on `stream` and never synchronise the device;"
                                  : "run on the calling thread (OpenMP is allowed); `stream` is always null;"}});
    const SearchNode* n = s.tree.find(nodeId);
    if (!n)
        return toMessages(system, "The node " + nodeId + " is gone.");
    const std::string targets = baselineTargets(m_task, s);
    const std::string taskText = m_taskFull + "\nTarget: " + m_target.description;
    const auto start = startingAttempt(s, nodeId);
    if (kind == Purpose::Evolve || kind == Purpose::Greedy) {
        const std::string parent = start
            ? programBlock("The parent program (" + s.tree.attempt(*start)->node + "), which scored:\n"
                    + describeAttempt(m_task, *s.tree.attempt(*start), 1000),
                *s.tree.attempt(*start))
            : std::string("There is no program yet: write the first implementation.");
        std::string others;
        if (kind == Purpose::Evolve)
            for (int i : inspirations(s, start, s.settings.inspirations))
                others += programBlock("An inspiration (" + s.tree.attempt(i)->node + ", J "
                                  + formatFixed(s.tree.attempt(i)->score(), 1) + "):",
                              *s.tree.attempt(i))
                    + "\n\n";
        return toMessages(system,
            renderPrompt("coder_evolve",
                {{"task", taskText}, {"targets", targets}, {"parent", parent}, {"inspirations", others}}));
    }
    if (kind == Purpose::Action) {
        std::string path;
        for (const SearchNode* p : s.tree.pathFromRoot(nodeId))
            path += "  " + renderNodeLine(s.tree, *p, 160) + "\n";
        const std::string startingPoint = start
            ? programBlock("Start from the program of " + s.tree.attempt(*start)->node + ", which scored:\n"
                    + describeAttempt(m_task, *s.tree.attempt(*start), 1000),
                *s.tree.attempt(*start))
            : std::string("There is no program to start from: write the first implementation from the task alone.");
        return toMessages(system,
            renderPrompt("coder_action",
                {{"task", taskText}, {"targets", targets}, {"node", n->id}, {"intent", n->intent},
                    {"rationale", n->rationale.empty() ? "" : "Why: " + n->rationale},
                    {"starting_point", startingPoint}, {"tree", "Where this intent sits in the search:\n" + path}}));
    }
    const Attempt* last = n->attempts.empty() ? nullptr : s.tree.attempt(n->attempts.back());
    const std::string attemptNo = std::to_string(n->attempts.size() + 1);
    const ActionState* action = s.actionOn(nodeId);
    if (kind == Purpose::Debug || !action || !action->best) {
        std::string lastProgram;
        if (last && !last->program.empty())
            lastProgram = programBlock("Its program:", *last);
        return toMessages(system,
            renderPrompt("coder_debug",
                {{"task", m_taskShort}, {"node", n->id}, {"intent", n->intent}, {"attempt", attemptNo},
                    {"last_outcome", last ? describeAttempt(m_task, *last) : std::string("none")},
                    {"last_program", lastProgram}}));
    }
    const Attempt& best = *s.tree.attempt(*action->best);
    std::string lastNote;
    if (last && last->index != best.index)
        lastNote = "The last attempt did not beat it:\n" + describeAttempt(m_task, *last, 1500) + "\n";
    return toMessages(system,
        renderPrompt("coder_improve",
            {{"task", m_taskShort}, {"targets", targets}, {"node", n->id}, {"intent", n->intent},
                {"attempt", attemptNo}, {"best_outcome", describeAttempt(m_task, best)},
                {"best_program", programBlock("Its program:", best)}, {"last_note", lastNote},
                {"k", std::to_string(s.settings.stagnation)},
                {"min_gain", formatFixed(100 * s.settings.minImprovement, 0)}}));
}

} // namespace ks
