#include "node.h"

#include <array>
#include <utility>

namespace ks {

namespace {

constexpr std::array<std::pair<Author, std::string_view>, 4> kAuthors {{{Author::WorldModel, "world_model"},
    {Author::CodePolicy, "code_policy"}, {Author::Human, "human"}, {Author::System, "system"}}};
constexpr std::array<std::pair<NodeStatus, std::string_view>, 4> kStatuses {{{NodeStatus::Open, "open"},
    {NodeStatus::Active, "active"}, {NodeStatus::Closed, "closed"}, {NodeStatus::Pruned, "pruned"}}};

template<class E, std::size_t N>
std::string_view nameOf(const std::array<std::pair<E, std::string_view>, N>& table, E e)
{
    for (const auto& [value, name] : table)
        if (value == e)
            return name;
    return "?";
}

template<class E, std::size_t N>
std::optional<E> parse(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s)
{
    for (const auto& [value, name] : table)
        if (name == s)
            return value;
    return std::nullopt;
}

} // namespace

std::string_view authorName(Author a)
{
    return nameOf(kAuthors, a);
}

std::optional<Author> parseAuthor(std::string_view s)
{
    return parse(kAuthors, s);
}

std::string_view nodeStatusName(NodeStatus s)
{
    return nameOf(kStatuses, s);
}

std::optional<NodeStatus> parseNodeStatus(std::string_view s)
{
    return parse(kStatuses, s);
}

} // namespace ks
