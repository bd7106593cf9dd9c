# Warnings and sanitizers for our own targets only (third-party headers are included as SYSTEM).
add_library(dptrain_compile_options INTERFACE)
target_compile_options(dptrain_compile_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wpedantic>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
if(DPTRAIN_SANITIZE)
  target_compile_options(dptrain_compile_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(dptrain_compile_options INTERFACE -fsanitize=address,undefined)
endif()
if(DPTRAIN_TSAN)
  if(DPTRAIN_SANITIZE)
    message(FATAL_ERROR "DPTRAIN_TSAN and DPTRAIN_SANITIZE cannot be combined (ThreadSanitizer excludes AddressSanitizer)")
  endif()
  target_compile_options(dptrain_compile_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -fno-omit-frame-pointer>)
  target_link_options(dptrain_compile_options INTERFACE -fsanitize=thread)
endif()
# Warnings as errors (DPTRAIN_WERROR, on in CI): our code builds clean with the flags above, and a new
# warning should stop a change from landing rather than scroll past. Off by default, so a newer
# compiler's new warnings never stop a user's build.
if(DPTRAIN_WERROR)
  target_compile_options(dptrain_compile_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
endif()
