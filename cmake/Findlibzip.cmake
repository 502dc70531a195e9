# Finds libzip (headers and library) and defines the imported target libzip::zip.
# Debian's own libzip CMake package also requires the zipcmp, zipmerge and ziptool programs
# (separate Debian packages) and fails to load without them, so headgrad uses this module.
include(FindPackageHandleStandardArgs)
find_path(libzip_INCLUDE_DIR zip.h)
find_library(libzip_LIBRARY zip)
find_package_handle_standard_args(libzip REQUIRED_VARS libzip_LIBRARY libzip_INCLUDE_DIR)
if(libzip_FOUND AND NOT TARGET libzip::zip)
  add_library(libzip::zip UNKNOWN IMPORTED)
  set_target_properties(libzip::zip PROPERTIES IMPORTED_LOCATION "${libzip_LIBRARY}"
                                               INTERFACE_INCLUDE_DIRECTORIES "${libzip_INCLUDE_DIR}")
endif()
mark_as_advanced(libzip_INCLUDE_DIR libzip_LIBRARY)
