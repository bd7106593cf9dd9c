"""Run by `spack python` in spack/site-externals after the install: which changes in the clone the
recipe's detect_dev_src_change() counts (it decides whether `spack install` rebuilds dptrain).
Every change is undone (mtime restored, files removed) before the next."""

import os
import tempfile

import spack.environment as ev

env = ev.active_environment()
(spec,) = [s for s in env.concrete_roots() if s.name == "dptrain"]
assert spec.installed, "dptrain is not installed (the install test runs first)"
pkg = spec.package
source = spec.variants["dev_path"].value


def changed(what):
    result = pkg.detect_dev_src_change()
    print(f"{what}: {'change' if result else 'no change'}")
    return result


assert not changed("as installed")

# Spack's own files in the clone, newer than the install: never a change. (.spack-env and the
# environments' spack.lock files are there already: the install made them.)
made = []
try:
    for name in ("spack.lock", "build-linux-debian12-x86_64-abcdefg"):
        path = os.path.join(source, name)
        if not os.path.lexists(path):
            made.append(path)
            if name.startswith("build-"):
                os.symlink(tempfile.gettempdir(), path)
            else:
                open(path, "w").close()
    assert not changed("Spack's files added"), "Spack's own files count as a source change"
finally:
    for path in made:
        os.remove(path)

# A tracked source touched: a change; its old time back: none.
tracked = os.path.join(source, "app", "main.cpp")
before = os.stat(tracked)
try:
    os.utime(tracked)
    assert changed("app/main.cpp touched"), "a touched tracked source is not a change"
finally:
    os.utime(tracked, ns=(before.st_atime_ns, before.st_mtime_ns))
assert not changed("app/main.cpp restored")

# A new file git would track (not ignored): a change.
fd, path = tempfile.mkstemp(suffix=".cpp", dir=os.path.join(source, "app"))
os.close(fd)
try:
    assert changed("new app/*.cpp"), "a new source file is not a change"
finally:
    os.remove(path)
assert not changed("new file removed")
