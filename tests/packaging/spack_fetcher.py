"""Run by `spack python` in an environment that knows the dptrain recipe: outside a develop:
section, dptrain@0.1.0 must be fetchable, from the project's git repository at a tag."""

import sys

import spack.fetch_strategy as fs
import spack.repo
import spack.spec

pkg_cls = spack.repo.PATH.get_pkg_class("dptrain")
pkg = pkg_cls(spack.spec.Spec("dptrain@=0.1.0"))
fetcher = fs.for_package_version(pkg)
print(f"dptrain@0.1.0 fetches with {fetcher}")
if not (isinstance(fetcher, fs.GitFetchStrategy) and fetcher.url == pkg_cls.git and fetcher.tag):
    sys.exit("FAIL: dptrain@0.1.0 has no git fetcher with a tag")
