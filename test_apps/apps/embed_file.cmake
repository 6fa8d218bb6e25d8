# cmake -DINPUT=file -DOUTPUT=header.h -DNAME=symbol -P embed_file.cmake
# Writes `alignas(8) static const unsigned char NAME[] = {...};` with the bytes of INPUT.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" len)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
math(EXPR n "${len} / 2")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by embed_file.cmake (${n} bytes)\n#pragma once\nalignas(8) static const unsigned char ${NAME}[] = {\n${bytes}\n};\n")
