#include "testmain.h"

#include <task/dtype.h>

#include <cmath>
#include <cstring>
#include <limits>

// The ABI prelude is what candidate kernels see on the host backend; the harness converts with
// core's own routines. The two are written independently, so they are checked against each other.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#pragma GCC diagnostic ignored "-Wshadow"
#include "../resources/abi/ks_prelude.h"
#pragma GCC diagnostic pop

using namespace ks;

class TestDType : public QObject
{
    Q_OBJECT
private slots:
    void parsesNames_data();
    void parsesNames();
    void roundTrips_data();
    void roundTrips();
    void specialValues();
    void preludeAgreesWithHarness_data();
    void preludeAgreesWithHarness();
    void fp8RoundsToNearestEven_data();
    void fp8RoundsToNearestEven();
};

void TestDType::parsesNames_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("size");
    QTest::newRow("float32") << "float32" << 4;
    QTest::newRow("bfloat16") << "bfloat16" << 2;
    QTest::newRow("float16") << "float16" << 2;
    QTest::newRow("float8_e4m3fn") << "float8_e4m3fn" << 1;
    QTest::newRow("float8_e5m2") << "float8_e5m2" << 1;
    QTest::newRow("int64") << "int64" << 8;
    QTest::newRow("int32") << "int32" << 4;
    QTest::newRow("int8") << "int8" << 1;
    QTest::newRow("bool") << "bool" << 1;
}

void TestDType::parsesNames()
{
    QFETCH(QString, name);
    QFETCH(int, size);
    const auto t = parseDType(name.toStdString());
    QVERIFY(t.has_value());
    QCOMPARE(static_cast<int>(dtypeSize(*t)), size);
    QCOMPARE(QString::fromStdString(std::string(dtypeName(*t))), name == u"float8_e4m3" ? u"float8_e4m3fn"_qs : name);
    QVERIFY(!parseDType("bf16").has_value());
}

void TestDType::roundTrips_data()
{
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<double>("value");
    QTest::addColumn<double>("expected");
    QTest::newRow("bf16 exact") << "bfloat16" << 1.5 << 1.5;
    QTest::newRow("bf16 rounds to nearest even") << "bfloat16" << 1.00390625 << 1.0; // halfway: even mantissa
    QTest::newRow("bf16 rounds up") << "bfloat16" << 1.0078125 * 1.0001 << 1.0078125;
    QTest::newRow("f16 exact") << "float16" << -2.25 << -2.25;
    QTest::newRow("f16 max") << "float16" << 65504.0 << 65504.0;
    QTest::newRow("f16 subnormal") << "float16" << std::ldexp(1.0, -24) << std::ldexp(1.0, -24);
    QTest::newRow("f16 overflow") << "float16" << 70000.0 << std::numeric_limits<double>::infinity();
    QTest::newRow("e4m3 max") << "float8_e4m3fn" << 448.0 << 448.0;
    QTest::newRow("e4m3 saturates") << "float8_e4m3fn" << 1000.0 << 448.0;
    QTest::newRow("e4m3 nearest") << "float8_e4m3fn" << 300.0 << 288.0;
    QTest::newRow("e4m3 negative") << "float8_e4m3fn" << -0.5 << -0.5;
    QTest::newRow("e5m2 max") << "float8_e5m2" << 57344.0 << 57344.0;
    QTest::newRow("int32") << "int32" << -123456.0 << -123456.0;
    QTest::newRow("int8") << "int8" << -128.0 << -128.0;
    QTest::newRow("bool") << "bool" << 3.0 << 1.0;
}

void TestDType::roundTrips()
{
    QFETCH(QString, dtype);
    QFETCH(double, value);
    QFETCH(double, expected);
    const DType t = *parseDType(dtype.toStdString());
    unsigned char buf[8] = {};
    storeElement(t, buf, value);
    QCOMPARE(loadElement(t, buf), expected);
}

void TestDType::specialValues()
{
    unsigned char buf[8] = {};
    for (const DType t : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float8E4M3, DType::Float8E5M2}) {
        storeElement(t, buf, std::numeric_limits<double>::quiet_NaN());
        QVERIFY2(std::isnan(loadElement(t, buf)), std::string(dtypeName(t)).c_str());
    }
    storeElement(DType::BFloat16, buf, -std::numeric_limits<double>::infinity());
    QCOMPARE(loadElement(DType::BFloat16, buf), -std::numeric_limits<double>::infinity());
    // Integers saturate at their bounds (a plain conversion of a value out of range is undefined)
    // and take NaN as 0.
    const std::pair<DType, double> bounds[] = {
        {DType::Int8, 127.0}, {DType::Int32, 2147483647.0}, {DType::Int64, 9223372036854775807.0}};
    for (const auto& [t, high] : bounds) {
        storeElement(t, buf, 1e300);
        QCOMPARE(loadElement(t, buf), high);
        storeElement(t, buf, -std::numeric_limits<double>::infinity());
        QCOMPARE(loadElement(t, buf), -high - 1);
        storeElement(t, buf, std::numeric_limits<double>::quiet_NaN());
        QCOMPARE(loadElement(t, buf), 0.0);
        storeElement(t, buf, -42.0);
        QCOMPARE(loadElement(t, buf), -42.0);
    }
}

void TestDType::preludeAgreesWithHarness_data()
{
    QTest::addColumn<double>("value");
    for (const double v : {0.0, -0.0, 1.0, -1.0, 0.1, 3.14159, 1e-3, 7e-6, 1e-8, 123.456, -65504.0, 1e5, 448.0, 0.0019})
        QTest::addRow("%g", v) << v;
}

void TestDType::preludeAgreesWithHarness()
{
    QFETCH(double, value);
    const float f = static_cast<float>(value);
    unsigned char buf[2] = {};
    storeElement(DType::BFloat16, buf, f);
    const ks_bf16_t b(f);
    QCOMPARE(std::memcmp(buf, &b.bits, 2), 0);
    storeElement(DType::Float16, buf, f);
    const ks_f16_t h(f);
    QCOMPARE(std::memcmp(buf, &h.bits, 2), 0);
    storeElement(DType::Float8E4M3, buf, f);
    const ks_f8e4m3_t e4(f);
    QCOMPARE(static_cast<int>(buf[0]), static_cast<int>(e4.bits));
    storeElement(DType::Float8E5M2, buf, f);
    const ks_f8e5m2_t e5(f);
    QCOMPARE(static_cast<int>(buf[0]), static_cast<int>(e5.bits));
    QCOMPARE(static_cast<double>(static_cast<float>(b)), loadElement(DType::BFloat16, &b.bits));
}

// The harness's fp8 encoder (a binary search) against a plain scan of every code: each code's
// value, every midpoint between neighbours (ties go to the even code), values a hair off each
// midpoint, saturation, and a spread of random magnitudes of both signs.
void TestDType::fp8RoundsToNearestEven_data()
{
    QTest::addColumn<int>("dtype");
    QTest::newRow("e4m3") << static_cast<int>(DType::Float8E4M3);
    QTest::newRow("e5m2") << static_cast<int>(DType::Float8E5M2);
}

void TestDType::fp8RoundsToNearestEven()
{
    QFETCH(int, dtype);
    const auto t = static_cast<DType>(dtype);
    std::vector<double> finite; // positive finite values by code
    for (int code = 0; code < 128; ++code) {
        const auto byte = static_cast<unsigned char>(code);
        const double v = loadElement(t, &byte);
        if (!std::isfinite(v))
            break;
        finite.push_back(v);
    }
    auto scan = [&](double v) {
        const double a = std::min(std::fabs(v), finite.back());
        std::size_t best = 0;
        for (std::size_t c = 1; c < finite.size(); ++c) {
            const double err = std::fabs(finite[c] - a), bestErr = std::fabs(finite[best] - a);
            if (err < bestErr || (err == bestErr && c % 2 == 0))
                best = c;
        }
        return static_cast<int>(best | (std::signbit(v) ? 0x80 : 0));
    };
    std::vector<double> values;
    for (std::size_t c = 0; c < finite.size(); ++c) {
        values.push_back(finite[c]);
        if (c + 1 < finite.size()) {
            const double mid = 0.5 * (finite[c] + finite[c + 1]);
            values.insert(values.end(), {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9)});
        }
    }
    values.insert(values.end(), {finite.back() * 1.01, 1e30});
    std::uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 20000; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        values.push_back(std::ldexp(static_cast<double>(x % 1000000) / 1e6, static_cast<int>(x % 40) - 24));
    }
    for (const double v : values)
        for (const double signedV : {v, -v}) {
            unsigned char got = 0;
            storeElement(t, &got, signedV);
            QVERIFY2(static_cast<int>(got) == scan(signedV), qPrintable(QString::number(signedV, 'g', 17)));
        }
}

KS_TEST_MAIN_CORE(TestDType)
#include "tst_dtype.moc"
