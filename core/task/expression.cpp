#include "expression.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

namespace ks {
namespace {

struct ParseError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Parser
{
public:
    Parser(std::string_view text, const ExpressionLookup* lookup)
        : m_text(text)
        , m_lookup(lookup)
    {
    }

    double parseAll()
    {
        const double v = comparison();
        skipSpace();
        if (m_pos != m_text.size())
            fail("unexpected '" + std::string(1, m_text[m_pos]) + "'");
        return v;
    }

    std::vector<std::string> identifiers;

private:
    [[noreturn]] void fail(const std::string& what) const
    {
        throw ParseError(what + " at column " + std::to_string(m_pos + 1) + " of '" + std::string(m_text) + "'");
    }

    void skipSpace()
    {
        while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])))
            ++m_pos;
    }

    bool accept(std::string_view token)
    {
        skipSpace();
        if (m_text.substr(m_pos, token.size()) == token) {
            m_pos += token.size();
            return true;
        }
        return false;
    }

    double comparison()
    {
        const double lhs = additive();
        if (accept("=="))
            return lhs == additive() ? 1.0 : 0.0;
        if (accept("!="))
            return lhs != additive() ? 1.0 : 0.0;
        if (accept("<="))
            return lhs <= additive() ? 1.0 : 0.0;
        if (accept(">="))
            return lhs >= additive() ? 1.0 : 0.0;
        if (accept("<"))
            return lhs < additive() ? 1.0 : 0.0;
        if (accept(">"))
            return lhs > additive() ? 1.0 : 0.0;
        return lhs;
    }

    double additive()
    {
        double v = term();
        for (;;) {
            if (accept("+"))
                v += term();
            else if (accept("-"))
                v -= term();
            else
                return v;
        }
    }

    double term()
    {
        double v = unary();
        for (;;) {
            if (accept("//")) {
                const double d = unary();
                if (d == 0.0)
                    fail("division by zero");
                v = std::floor(v / d);
            } else if (accept("*")) {
                v *= unary();
            } else if (accept("/")) {
                const double d = unary();
                if (d == 0.0)
                    fail("division by zero");
                v /= d;
            } else if (accept("%")) {
                const double d = unary();
                if (d == 0.0)
                    fail("division by zero");
                v = std::fmod(v, d);
            } else {
                return v;
            }
        }
    }

    double unary()
    {
        if (accept("-"))
            return -unary();
        if (accept("+"))
            return unary();
        return primary();
    }

    double primary()
    {
        skipSpace();
        if (accept("(")) {
            const double v = comparison();
            if (!accept(")"))
                fail("missing ')'");
            return v;
        }
        if (m_pos < m_text.size() && (std::isdigit(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '.'))
            return number();
        if (m_pos < m_text.size() && (std::isalpha(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
            return name();
        fail(m_pos < m_text.size() ? "unexpected '" + std::string(1, m_text[m_pos]) + "'" : "unexpected end");
    }

    double number()
    {
        const std::size_t start = m_pos;
        while (m_pos < m_text.size()
            && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '.'
                || ((m_text[m_pos] == '-' || m_text[m_pos] == '+')
                    && (m_text[m_pos - 1] == 'e' || m_text[m_pos - 1] == 'E'))))
            ++m_pos;
        const std::string token(m_text.substr(start, m_pos - start));
        std::size_t used = 0;
        double v = 0;
        try {
            v = std::stod(token, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != token.size())
            fail("bad number '" + token + "'");
        return v;
    }

    double name()
    {
        const std::size_t start = m_pos;
        while (
            m_pos < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
            ++m_pos;
        const std::string ident(m_text.substr(start, m_pos - start));
        if (const auto kind = reductionKind(ident); kind && accept("("))
            return reduce(*kind, ident);
        if (const auto local = m_locals.find(ident); local != m_locals.end())
            return local->second;
        identifiers.push_back(ident);
        std::optional<std::int64_t> index;
        if (accept("[")) {
            const double at = comparison();
            if (!accept("]"))
                fail("missing ']'");
            // Beyond 2^53 a double no longer names one element: no tensor is that long anyway.
            if (!(std::fabs(at) < 9007199254740992.0))
                fail("index out of range in '" + ident + "[...]'");
            index = static_cast<std::int64_t>(at);
        }
        accept(".item()");
        if (!m_lookup)
            return 1.0; // only collecting names: any non-zero value keeps divisions well-defined
        const auto v = (*m_lookup)(ident, index);
        if (!v && index && m_dry)
            return 1.0; // an empty reduction's body may index past the end: it is only checked, never used
        if (!v)
            fail(index ? "unknown tensor or index out of range '" + ident + "[" + std::to_string(*index) + "]'"
                       : "unknown name '" + ident + "'");
        return *v;
    }

    enum class Reduction { Sum, Min, Max, All };

    static std::optional<Reduction> reductionKind(std::string_view ident)
    {
        if (ident == "sum")
            return Reduction::Sum;
        if (ident == "min")
            return Reduction::Min;
        if (ident == "max")
            return Reduction::Max;
        if (ident == "all")
            return Reduction::All;
        return std::nullopt;
    }

    // sum|min|max|all(i, begin, end, body): body reduced over i = begin .. end - 1. A cost model
    // needs sums of per-request work (`sum(b, 0, batch_size, kv_indptr[b + 1] - kv_indptr[b])`);
    // constraints check index tensors (`all(b, 0, batch_size, kv_indptr[b] <= kv_indptr[b + 1])`,
    // `max(i, 0, num_kv_indices, kv_indices[i]) < num_pages`). Over an empty range sum is 0, min
    // +inf, max -inf and all 1. The body is parsed again for every i; an empty range still parses
    // it once so that its mistakes show.
    double reduce(Reduction kind, const std::string& fn)
    {
        skipSpace();
        const std::size_t nameStart = m_pos;
        while (
            m_pos < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
            ++m_pos;
        const std::string var(m_text.substr(nameStart, m_pos - nameStart));
        if (var.empty() || std::isdigit(static_cast<unsigned char>(var[0])))
            fail(fn + " needs a variable name first, as in " + fn + "(i, 0, n, ...)");
        if (!accept(","))
            fail("missing ',' after the variable of " + fn);
        const double begin = std::ceil(comparison());
        if (!accept(","))
            fail("missing ',' after the start of " + fn);
        const double end = std::ceil(comparison());
        if (!accept(","))
            fail("missing ',' after the end of " + fn);
        if (end - begin > kMaxSumTerms)
            fail(fn + " over more than " + std::to_string(static_cast<long long>(kMaxSumTerms)) + " terms");
        const auto shadowed = m_locals.find(var);
        const std::optional<double> outer =
            shadowed == m_locals.end() ? std::nullopt : std::optional<double>(shadowed->second);
        const std::size_t bodyStart = m_pos;
        constexpr double inf = std::numeric_limits<double>::infinity();
        double total = kind == Reduction::Sum ? 0.0
            : kind == Reduction::Min          ? inf
            : kind == Reduction::Max          ? -inf
                                              : 1.0;
        const bool wasDry = m_dry;
        m_dry = m_dry || !(begin < end);
        for (double i = begin; i < end || (i == begin && m_dry); ++i) {
            m_pos = bodyStart;
            m_locals[var] = i;
            const double term = comparison();
            if (m_dry)
                break;
            switch (kind) {
            case Reduction::Sum:
                total += term;
                break;
            case Reduction::Min:
                total = std::min(total, term);
                break;
            case Reduction::Max:
                total = std::max(total, term);
                break;
            case Reduction::All:
                total = (total != 0.0 && term != 0.0) ? 1.0 : 0.0;
                break;
            }
        }
        m_dry = wasDry;
        if (outer)
            m_locals[var] = *outer;
        else
            m_locals.erase(var);
        if (!accept(")"))
            fail("missing ')' after the body of " + fn);
        return total;
    }

    static constexpr double kMaxSumTerms = 1e7;

    std::string_view m_text;
    const ExpressionLookup* m_lookup;
    std::size_t m_pos = 0;
    std::map<std::string, double> m_locals; // variables bound by a reduction
    bool m_dry = false; // parsing an empty reduction's body: checked, not used
};

} // namespace

ExpressionResult evaluateExpression(std::string_view text, const ExpressionLookup& lookup)
{
    Parser parser(text, &lookup);
    try {
        return {parser.parseAll(), {}};
    } catch (const ParseError& e) {
        return {std::nullopt, e.what()};
    }
}

std::vector<std::string> expressionIdentifiers(std::string_view text)
{
    Parser parser(text, nullptr);
    try {
        parser.parseAll();
    } catch (const ParseError&) {
    }
    return parser.identifiers;
}

} // namespace ks
