#pragma once

#include <search/journalevent.h>

#include <QAbstractListModel>

namespace ks::ui {

class SearchDocument;

// The events shown so far, one readable line each ("round 4 · world model · +n5 under n2 ...").
class EventLogModel : public QAbstractListModel
{
    Q_OBJECT
public:
    explicit EventLogModel(const SearchDocument& document, QObject* parent = nullptr);
    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;

    // The line for one event; empty for events not worth a line of their own.
    static QString describe(const JournalEvent& event);

private:
    const SearchDocument& m_document;
    int m_rows = 0;
};

} // namespace ks::ui
