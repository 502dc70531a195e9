# Writes OUTPUT, a C++ header defining the text of INPUT as the string constant NAME
# (a raw string literal), so that a file shipped with the sources is part of the library:
#   cmake -DINPUT=page.html -DOUTPUT=page.hpp -DNAME=kPage -P EmbedText.cmake
file(READ "${INPUT}" text)
if(text MATCHES "\\)HGEMBED\"")
  message(FATAL_ERROR "${INPUT} contains the raw string's end marker )HGEMBED\"")
endif()
get_filename_component(source "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${source} by cmake/EmbedText.cmake; edit the source, not this file.\n"
     "#pragma once\n\ninline constexpr const char* ${NAME} = R\"HGEMBED(${text})HGEMBED\";\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
