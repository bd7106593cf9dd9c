#!/usr/bin/env python3
"""The packaging check must fail, naming the culprit, when the build and the recipe drift apart.
Each case copies the files it reads into a temporary tree, breaks one thing and runs the check.

Usage: test_check_spack_recipe.py SOURCE_DIR
"""

import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

CHECK = Path(__file__).with_name("check_spack_recipe.py")
SOURCE = Path(sys.argv.pop(1) if len(sys.argv) > 1 else Path(__file__).parents[2]).resolve()
RECIPE = "spack/repo/spack_repo/dptrain/packages/dptrain/package.py"
ENV = "spack.yaml"
SITE_ENV = "spack/site-externals/spack.yaml"
INSTALL_PAGE = "docs/installing.md"


class DriftIsCaught(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        shutil.copy(SOURCE / "CMakeLists.txt", self.root)
        (self.root / "docs").mkdir()
        shutil.copy(SOURCE / INSTALL_PAGE, self.root / INSTALL_PAGE)
        shutil.copytree(SOURCE / "cmake", self.root / "cmake")
        shutil.copy(SOURCE / ENV, self.root / ENV)
        shutil.copytree(SOURCE / "spack", self.root / "spack", ignore=shutil.ignore_patterns(".spack-env", "spack.lock"))

    def tearDown(self):
        self.tmp.cleanup()

    def run_check(self):
        result = subprocess.run([sys.executable, str(CHECK), str(self.root)], capture_output=True, text=True)
        return result.returncode, result.stdout + result.stderr

    def edit(self, rel, old, new):
        path = self.root / rel
        text = path.read_text(encoding="utf-8")
        self.assertIn(old, text, f"the test expects '{old}' in {rel}; update the test with the file")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    def assert_fails_naming(self, *words):
        code, out = self.run_check()
        self.assertEqual(code, 1, f"the check passed a broken tree:\n{out}")
        for word in words:
            self.assertIn(word, out)

    def test_the_copy_passes(self):
        code, out = self.run_check()
        self.assertEqual(code, 0, out)

    def test_new_cmake_dependency(self):
        with open(self.root / "cmake" / "Dependencies.cmake", "a", encoding="utf-8") as f:
            f.write("\nfind_package(Boost 1.80 REQUIRED COMPONENTS program_options)\n")
        self.assert_fails_naming("Boost", "CMAKE_TO_SPACK", "cmake/Dependencies.cmake")

    def test_recipe_drops_a_dependency(self):
        self.edit(RECIPE, 'depends_on("hdf5@1.10:", type=("build", "link"))', "")
        self.assert_fails_naming("depends_on(hdf5)", "HDF5")

    def test_version_bump_in_cmake_only(self):
        self.edit("CMakeLists.txt", "VERSION 0.1.0", "VERSION 0.2.0")
        self.assert_fails_naming("version('0.2.0')", "dptrain@=0.2.0")

    def test_cuda_13_cannot_reach_p100(self):
        self.edit(ENV, "- cuda@12", "- cuda@13")
        self.assert_fails_naming("cuda must be a 12.x release")

    def test_slurm_must_be_external(self):
        self.edit(ENV, "slurm:\n      buildable: false", "slurm:\n      buildable: true")
        self.assert_fails_naming("slurm:buildable")

    def test_onednn_3_is_refused(self):
        self.edit(RECIPE, '"onednn@2.6:2"', '"onednn@2.6:"')
        self.assert_fails_naming("onednn 2.x")

    def test_link_library_as_build_only(self):
        self.edit(RECIPE, 'depends_on("zlib-api", type=("build", "link"))', 'depends_on("zlib-api", type="build")')
        self.assert_fails_naming("zlib-api", "'link'")

    def test_cuda_library_without_condition(self):
        self.edit(RECIPE, 'with when("+cuda"):', 'if True:')
        self.assert_fails_naming("must only apply when +cuda")

    def test_recipe_that_does_not_compile(self):
        self.edit(RECIPE, "def cmake_args(self):", "def cmake_args(self)")
        self.assert_fails_naming("does not compile")

    def test_unknown_cmake_option(self):
        self.edit("CMakeLists.txt", "set(DPTRAIN_SPACK_SPEC", "set(DPTRAIN_SPEC")
        self.assert_fails_naming("-DDPTRAIN_SPACK_SPEC")

    def test_invalid_yaml(self):
        (self.root / ENV).write_text("spack:\n  specs: [dptrain\n", encoding="utf-8")
        self.assert_fails_naming("not valid YAML")

    def test_readme_out_of_date(self):
        self.edit(INSTALL_PAGE, "spack env activate .", "spack env activate spack/env")
        self.edit(ENV, "- openmpi ~fortran fabrics=ucx", "- openmpi ~fortran fabrics=ofi")
        self.assert_fails_naming("spack env activate .", "names spack/env", "openmpi ~fortran fabrics=ofi")

    def test_second_environment(self):
        (self.root / "spack" / "env").mkdir()
        shutil.copy(self.root / ENV, self.root / "spack" / "env" / "spack.yaml")
        self.assert_fails_naming("spack/env/spack.yaml: a second environment")

    def test_develop_path_not_the_clone(self):
        self.edit(ENV, "path: .", "path: spack")
        self.assert_fails_naming("spack.yaml: develop:dptrain:path")

    def test_repo_path_under_env(self):
        self.edit(ENV, "dptrain: spack/repo/spack_repo/dptrain", "dptrain: $env/spack/repo/spack_repo/dptrain")
        self.assert_fails_naming("not $env/")

    def test_site_package_buildable(self):
        self.edit(SITE_ENV, "openmpi:\n      buildable: false", "openmpi:\n      buildable: true")
        self.assert_fails_naming("packages:openmpi must be an external")

    def test_site_environment_elsewhere(self):
        self.edit(SITE_ENV, "path: ../..", "path: ..")
        self.assert_fails_naming("spack/site-externals/spack.yaml: develop:dptrain:path")

    def test_openmpi_cuda_and_fortran(self):
        self.edit(ENV, "- openmpi ~fortran", "- openmpi +cuda")
        self.assert_fails_naming("openmpi must not have +cuda", "openmpi must have ~fortran")

    def test_recipe_without_its_cuda_12_cap(self):
        self.edit(RECIPE, 'depends_on("cuda@:12", when=f"cuda_arch={_arch}")', "pass")
        self.assert_fails_naming("depends_on('cuda@:12', when='cuda_arch=60')", "cuda_arch=70")

    def test_recipe_without_the_nccl_gcc_14_conflict(self):
        self.edit(RECIPE, '"^nccl@:2.27.5 %gcc@14:"', '"^nccl@:2.10"')
        self.assert_fails_naming("NVIDIA/nccl#1743")

    def test_which_without_required(self):
        self.edit(RECIPE, "which(self.prefix.bin.dptrain, required=True)", "which(self.prefix.bin.dptrain)")
        self.assert_fails_naming("without required=True")

    def test_recipe_that_leaves_the_toolkit_to_cmake(self):
        self.edit(RECIPE, 'self.define("CMAKE_CUDA_COMPILER", join_path(cuda.bin, "nvcc")),', "")
        self.edit(RECIPE, 'self.define("CUDNN_ROOT", spec["cudnn"].prefix),', "")
        self.assert_fails_naming("cmake_args must set", "CMAKE_CUDA_COMPILER", "CUDNN_ROOT")


if __name__ == "__main__":
    unittest.main(verbosity=2)
