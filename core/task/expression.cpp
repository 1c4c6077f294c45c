#include "expression.h"

#include <cctype>
#include <cmath>
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
        identifiers.push_back(ident);
        std::optional<std::int64_t> index;
        if (accept("[")) {
            index = static_cast<std::int64_t>(comparison());
            if (!accept("]"))
                fail("missing ']'");
        }
        accept(".item()");
        if (!m_lookup)
            return 1.0; // only collecting names: any non-zero value keeps divisions well-defined
        const auto v = (*m_lookup)(ident, index);
        if (!v)
            fail(index ? "unknown tensor or index out of range '" + ident + "[" + std::to_string(*index) + "]'"
                       : "unknown name '" + ident + "'");
        return *v;
    }

    std::string_view m_text;
    const ExpressionLookup* m_lookup;
    std::size_t m_pos = 0;
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
