# One interface target carries the language level, warnings and Qt strictness for every target.
add_library(ksearch_common_cfg INTERFACE)
target_compile_features(ksearch_common_cfg INTERFACE cxx_std_20)
set(CMAKE_CXX_EXTENSIONS OFF)
target_compile_options(ksearch_common_cfg INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
      -Wcast-align -Wunused -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${KSEARCH_WERROR}>>:-Werror>
    # GCC 12 reports -Wrestrict inside std::string when -O2 inlines it (GCC bug 105329): a false
    # positive in libstdc++, not in our code.
    # It also reports -Wmaybe-uninitialized inside nlohmann::json iterators and std::optional
    # copies once -O2 inlines them (GCC bugs 80635, 107919): false positives in headers, and the
    # asan preset (UBSan included) runs the suite without this blind spot.
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict -Wno-maybe-uninitialized>
    # The runner's helper kernels: warnings as errors there too.
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${KSEARCH_WERROR}>>:-Werror=all-warnings>)
target_compile_definitions(ksearch_common_cfg INTERFACE
    QT_NO_CAST_FROM_ASCII
    QT_NO_CAST_TO_ASCII
    QT_NO_CAST_FROM_BYTEARRAY
    QT_NO_URL_CAST_FROM_STRING
    QT_USE_QSTRINGBUILDER
    QT_NO_FOREACH
    QT_NO_CONTEXTLESS_CONNECT
    QT_NO_NARROWING_CONVERSIONS_IN_CONNECT
    QT_DISABLE_DEPRECATED_UP_TO=0x060400
    KSEARCH_VERSION="${PROJECT_VERSION}")
