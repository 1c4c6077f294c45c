#include "uistyle.h"

namespace ks::ui {

namespace {

bool isActive(const SearchNode& n, const SearchState& s)
{
    return n.status == NodeStatus::Active || s.actionOn(n.id) != nullptr;
}

} // namespace

QColor statusColor(const SearchNode& n, const SearchState& s)
{
    if (isActive(n, s))
        return QColor(0xe0, 0x8a, 0x00);
    switch (n.status) {
    case NodeStatus::Open:
        return QColor(0x4a, 0x7f, 0xc1);
    case NodeStatus::Pruned:
        return QColor(0x9e, 0x9e, 0x9e);
    default:
        return n.solved() || n.id == SearchTree::kRootId ? QColor(0x3c, 0x9a, 0x45) : QColor(0xc0, 0x50, 0x4d);
    }
}

QColor statusFill(const SearchNode& n, const SearchState& s)
{
    if (isActive(n, s))
        return QColor(0xfd, 0xe7, 0xc8);
    switch (n.status) {
    case NodeStatus::Open:
        return QColor(0xe3, 0xee, 0xfb);
    case NodeStatus::Pruned:
        return QColor(0xee, 0xee, 0xee);
    default:
        return n.solved() || n.id == SearchTree::kRootId ? QColor(0xdc, 0xf2, 0xdc) : QColor(0xf8, 0xde, 0xde);
    }
}

QColor verdictColor(Verdict v)
{
    switch (v) {
    case Verdict::Passed:
        return QColor(0x3c, 0x9a, 0x45);
    case Verdict::CompileError:
        return QColor(0x8e, 0x44, 0xad);
    case Verdict::IncorrectNumerical:
    case Verdict::IncorrectShape:
        return QColor(0xc0, 0x50, 0x4d);
    case Verdict::RuntimeError:
        return QColor(0xd3, 0x54, 0x00);
    case Verdict::Timeout:
        return QColor(0x7f, 0x8c, 0x8d);
    case Verdict::Rejected:
        return QColor(0x2c, 0x3e, 0x50);
    case Verdict::HarnessError: // never in a tree: the search records none
        return QColor(0xb0, 0xb0, 0xb0);
    }
    return Qt::black;
}

QColor bestColor()
{
    return QColor(0xd4, 0xa0, 0x17);
}

} // namespace ks::ui
