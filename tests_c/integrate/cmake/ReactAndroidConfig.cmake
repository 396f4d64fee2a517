# Stand-in for React Native's prefab package (scripts/test-integrate.sh, configure-only checks of
# whisper.rn 0.7.4's Android CMakeLists.txt): the targets it links, without anything behind them.
foreach(_t jsi reactnative turbomodulejsijni react_nativemodule_core)
  if(NOT TARGET ReactAndroid::${_t})
    add_library(ReactAndroid::${_t} INTERFACE IMPORTED)
  endif()
endforeach()
set(ReactAndroid_FOUND TRUE)
