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
  # The sanitizers' instrumentation makes GCC's flow-sensitive warnings unreliable (GCC's manual
  # advises against -Werror with -fsanitize; GCC 12 reports std::regex's own states as "maybe
  # uninitialized" under ASan). These stay warnings in the sanitizer builds and remain errors in the
  # uninstrumented cpu and cuda builds, where they are trustworthy.
  if(DPTRAIN_SANITIZE OR DPTRAIN_TSAN)
    target_compile_options(dptrain_compile_options INTERFACE
      $<$<COMPILE_LANGUAGE:CXX>:-Wno-error=maybe-uninitialized -Wno-error=uninitialized
      -Wno-error=array-bounds -Wno-error=stringop-overflow -Wno-error=stringop-overread
      -Wno-error=null-dereference -Wno-error=free-nonheap-object -Wno-error=use-after-free
      -Wno-error=dangling-pointer -Wno-error=tsan>)
  endif()
endif()
