#pragma once

#include <QByteArray>
#include <QList>

namespace ks {

// Splits a server-sent-events byte stream into events, however the bytes arrive in chunks.
class SseStreamParser
{
public:
    struct Event {
        QByteArray event; // "message" unless the server named it
        QByteArray data; // data lines joined with '\n'
    };
    QList<Event> feed(const QByteArray& bytes);
    bool hasPartialEvent() const { return !m_buffer.isEmpty() || !m_data.isEmpty(); }

private:
    QByteArray m_buffer;
    QByteArray m_event;
    QByteArray m_data;
    bool m_hasData = false;
};

} // namespace ks
