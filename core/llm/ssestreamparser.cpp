#include "ssestreamparser.h"

namespace ks {

QList<SseStreamParser::Event> SseStreamParser::feed(const QByteArray& bytes)
{
    QList<Event> events;
    m_buffer += bytes;
    for (;;) {
        const qsizetype nl = m_buffer.indexOf('\n');
        if (nl < 0)
            break;
        QByteArray line = m_buffer.left(nl);
        m_buffer.remove(0, nl + 1);
        if (line.endsWith('\r'))
            line.chop(1);
        if (line.isEmpty()) { // a blank line ends the event
            if (m_hasData)
                events.append({m_event.isEmpty() ? QByteArrayLiteral("message") : m_event, m_data});
            m_event.clear();
            m_data.clear();
            m_hasData = false;
            continue;
        }
        if (line.startsWith(':'))
            continue; // comment / keep-alive
        const qsizetype colon = line.indexOf(':');
        const QByteArray field = colon < 0 ? line : line.left(colon);
        QByteArray value = colon < 0 ? QByteArray() : line.mid(colon + 1);
        if (value.startsWith(' '))
            value.remove(0, 1);
        if (field == "data") {
            if (m_hasData)
                m_data += '\n';
            m_data += value;
            m_hasData = true;
        } else if (field == "event") {
            m_event = value;
        }
    }
    return events;
}

} // namespace ks
