#include "testmain.h"

#include <task/kernellibraries.h>

using namespace ks;

// Which shared objects a compiled candidate may not bring in to do its work (docs/security.md,
// pattern 15), by file name wherever they lie; the rest of what a CUDA process loads stays allowed.
class TestKernelLibraries : public QObject
{
    Q_OBJECT
private slots:
    void kernelLibrariesAreNamed_data();
    void kernelLibrariesAreNamed();
};

void TestKernelLibraries::kernelLibrariesAreNamed_data()
{
    QTest::addColumn<QStringList>("loaded");
    QTest::addColumn<QString>("named"); // empty: none is a kernel library
    const auto row = [](const char* tag, QStringList loaded, const char* named) {
        QTest::newRow(tag) << loaded << QString::fromLatin1(named);
    };
    row("nothing loaded", {}, "");
    row("cuBLAS", {u"/usr/local/cuda-13.0/lib/libcublas.so.13"_qs}, "libcublas.so.13");
    row("cuBLASLt after an allowed one",
        {u"/usr/local/cuda/lib64/libcudart.so.13"_qs, u"/usr/local/cuda/lib64/libcublasLt.so.13.0.0"_qs},
        "libcublasLt.so.13.0.0");
    row("a cuDNN part", {u"/opt/cudnn/lib/libcudnn_ops.so.9"_qs}, "libcudnn_ops.so.9");
    row("cuSPARSELt", {u"libcusparseLt.so.0"_qs}, "libcusparseLt.so.0");
    row("libtorch's CUDA part", {u"/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"_qs},
        "libtorch_cuda.so");
    row("TensorRT", {u"/usr/lib/x86_64-linux-gnu/libnvinfer.so.10"_qs}, "libnvinfer.so.10");
    row("OpenBLAS", {u"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"_qs}, "libopenblas.so.0");
    row("reference BLAS", {u"/lib/x86_64-linux-gnu/libblas.so.3"_qs}, "libblas.so.3");
    row("MKL", {u"/opt/intel/mkl/lib/libmkl_core.so.2"_qs}, "libmkl_core.so.2");
    row("what a CUDA process loads itself",
        {u"/usr/lib/x86_64-linux-gnu/libcuda.so.1"_qs, u"/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1"_qs,
            u"/usr/local/cuda/lib64/libcudart.so.13"_qs, u"/usr/local/cuda/lib64/libnvrtc.so.13"_qs,
            u"/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"_qs},
        "");
    row("C and C++ runtimes, zlib", {u"/lib/x86_64-linux-gnu/libstdc++.so.6"_qs, u"/lib/x86_64-linux-gnu/libz.so.1"_qs},
        "");
    row("a folder named like a library", {u"/opt/libcublas/lib/libmine.so"_qs}, "");
}

void TestKernelLibraries::kernelLibrariesAreNamed()
{
    QFETCH(QStringList, loaded);
    QFETCH(QString, named);
    std::vector<std::string> paths;
    for (const QString& p : loaded)
        paths.push_back(p.toStdString());
    const auto found = kernelLibraryAmong(paths);
    QCOMPARE(found ? QString::fromStdString(*found) : QString(), named);
}

KS_TEST_MAIN_CORE(TestKernelLibraries)
#include "tst_kernellibraries.moc"
