#pragma once

#include <QMainWindow>

class QTableWidget;

namespace ks::ui {

// The main window. At this stage it shows the tasks a search can start from; the intent tree,
// inspector and charts arrive with the engine.
class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

public slots:
    void reloadTasks();

private:
    void createActions();

    QTableWidget* m_tasks = nullptr;
};

} // namespace ks::ui
