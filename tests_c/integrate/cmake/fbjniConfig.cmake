# Stand-in for fbjni's prefab package (see ReactAndroidConfig.cmake beside it).
if(NOT TARGET fbjni::fbjni)
  add_library(fbjni::fbjni INTERFACE IMPORTED)
endif()
set(fbjni_FOUND TRUE)
