# The Spack recipe for dptrain, in the layout of Spack v1.0 and later: build systems are imported
# from the builtin repository (spack_repo.builtin.build_systems), directives and helpers from
# spack.package. tests/packaging/check_spack_recipe.py keeps it in step with the CMake build
# (dependencies, options, version); run it after any change here or in cmake/.

import os

from spack_repo.builtin.build_systems.cmake import CMakePackage
from spack_repo.builtin.build_systems.cuda import CudaPackage

import spack.store
from spack.package import *

# Architectures that CUDA 13 and cuDNN 9.11 and later no longer support (Maxwell, Pascal, Volta);
# the C4130's P100 (60) and V100 (70) are among them.
LEGACY_CUDA_ARCHS = ("50", "52", "53", "60", "61", "62", "70", "72")


class Dptrain(CMakePackage, CudaPackage):
    """Data-parallel training of convolutional networks on GPU clusters run by Slurm: MPI between
    nodes, NCCL inside them, cuDNN on GPUs and oneDNN on CPUs, HDF5 for data and checkpoints."""

    homepage = "https://github.com/dptrain/dptrain"
    git = "https://github.com/dptrain/dptrain.git"

    # Releases are git tags. The environments in this clone (spack.yaml, spack/site-externals)
    # build from the clone through `develop:` instead, so nothing is fetched there.
    # The newest version here must equal project(dptrain VERSION ...) in CMakeLists.txt.
    version("0.1.0", tag="v0.1.0")

    # `cuda` and `cuda_arch` come from CudaPackage.
    variant(
        "tests",
        default=False,
        description="Build the tests (Catch2); 'spack install --test=root' runs the unit tests",
    )

    # Build tools: needed to configure and compile, never at run time.
    depends_on("cmake@3.25:", type="build")
    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("pkgconfig", type="build")  # CMake finds TurboJPEG through pkg-config

    # Libraries linked into the binary.
    # run as well: jobs start ranks with this MPI's mpiexec, or srun through its PMIx.
    depends_on("mpi", type=("build", "link", "run"))
    depends_on("hdf5@1.10:", type=("build", "link"))
    # The CPU backend uses the oneDNN 2.x C++ API (Debian 12 ships 2.6); oneDNN 3 changed it
    # incompatibly (primitive descriptors, post-ops). Spack's 2.x releases are 2.0, 2.1-rc, 2.5.2
    # and 2.7.3, so this picks 2.7.3.
    depends_on("onednn@2.6:2", type=("build", "link"))
    # The TurboJPEG and libjpeg APIs, libturbojpeg.pc and libjpeg.pc.
    depends_on("libjpeg-turbo@2:", type=("build", "link"))
    depends_on("zlib-api", type=("build", "link"))

    # Header-only libraries: only the compiler sees them.
    depends_on("cli11@2:", type="build")
    depends_on("nlohmann-json@3:", type="build")
    depends_on("catch2@2", type="build", when="+tests")  # the tests use the Catch2 v2 API

    with when("+cuda"):
        # CudaPackage declares cuda as well; it is named here so the recipe lists everything CMake
        # looks for. CUDA 12 still reaches sm_60/sm_70; CUDA 13 starts at sm_75 (CudaPackage
        # turns a cuda_arch into the matching CUDA range).
        depends_on("cuda@12:", type=("build", "link"))
        depends_on("cudnn@9:", type=("build", "link"))
        for _arch in LEGACY_CUDA_ARCHS:
            # CUDA 13 stops at sm_75 (nvcc refuses compute_60), cuDNN 9.11 at sm_75 as well.
            depends_on("cuda@:12", when=f"cuda_arch={_arch}")
            depends_on("cudnn@:9.10", when=f"cuda_arch={_arch}")
        # NCCL compiles device code, so it must be built for the same GPUs.
        for _arch in CudaPackage.cuda_arch_values:
            depends_on(
                f"nccl +cuda cuda_arch={_arch}", type=("build", "link"), when=f"cuda_arch={_arch}"
            )

    # NCCL up to 2.27.5 (the newest in Spack's v2025.07 packages) does not compile with GCC 14
    # (NVIDIA/nccl#1743: its Makefiles ask for C++11, which GCC 14's headers no longer accept).
    conflicts(
        "^nccl@:2.27.5 %gcc@14:",
        when="+cuda",
        msg="NCCL 2.27.5 and older do not build with GCC 14 (NVIDIA/nccl#1743): "
        "build nccl with %gcc@:13 or use a newer NCCL",
    )
    conflicts(
        "+cuda cuda_arch=none",
        msg="dptrain +cuda needs cuda_arch: 60 for P100, 70 for V100, 90 for H100/H200",
    )

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define_from_variant("DPTRAIN_CUDA", "cuda"),
            self.define_from_variant("DPTRAIN_BUILD_TESTS", "tests"),
            # What `dptrain info` prints, so a job log names the exact build.
            self.define("DPTRAIN_BUILT_BY", "spack"),
            self.define("DPTRAIN_SPACK_SPEC", spec.format("{name}{@version}{variants} {/hash:7}")),
            # Spack runs ccache itself when its config says so (config:ccache); CMake's own
            # launcher would put a second one in front of Spack's compiler wrapper.
            self.define("DPTRAIN_CCACHE", False),
        ]
        if spec.satisfies("+cuda"):
            # The toolkit, cuDNN and NCCL of this spec, never a system CUDA in /usr/local/cuda:
            # Spack's cuda sets CUDA_HOME and CUDAHOSTCXX but not CUDACXX, and cmake/Cuda.cmake
            # would otherwise take /usr/local/cuda/bin/nvcc and find its libraries first.
            cuda = spec["cuda"].prefix
            args += [
                self.define("CMAKE_CUDA_ARCHITECTURES", spec.variants["cuda_arch"].value),
                self.define("CMAKE_CUDA_COMPILER", join_path(cuda.bin, "nvcc")),
                self.define("CUDAToolkit_ROOT", cuda),
                self.define("CUDNN_ROOT", spec["cudnn"].prefix),
                self.define("NCCL_ROOT", spec["nccl"].prefix),
            ]
        return args

    def check(self):
        """Build-time tests (spack install --test=root): the unit tests. The MPI, end-to-end and
        GPU tests need mpiexec slots, Fashion-MNIST and a GPU, which a build node may not have."""
        # Spack runs this on the CMake builder's adapter of the package: it has build_directory
        # (a builder attribute) but no `builder`.
        if not self.spec.satisfies("+tests"):
            tty.warn("dptrain was built without +tests, so there are no tests to run")
            return
        ctest = Executable(self.spec["cmake"].prefix.bin.ctest)
        with working_dir(self.build_directory):
            ctest("--output-on-failure", "-L", "unit")

    def detect_dev_src_change(self):
        """Whether a develop build's sources changed since it was installed (Spack then rebuilds
        it): a file git tracks, or would track, is newer than the install, or a tracked file is
        gone. Spack's default looks at every file under the clone, where Spack itself writes the
        environment's spack.lock, its view and the build-<arch>-<hash> links at each install, so
        with it every `spack install` would rebuild dptrain. Outside a git clone the default
        applies."""
        source = self.spec.variants["dev_path"].value
        git = which("git")
        if git is None:
            return super().detect_dev_src_change()
        listing = git(
            "-C",
            source,
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            output=str,
            error=os.devnull,
            fail_on_error=False,
        )
        if git.returncode != 0:
            return super().detect_dev_src_change()
        _, record = spack.store.STORE.db.query_by_spec_hash(self.spec.dag_hash())
        for name in filter(None, listing.split("\0")):
            try:
                # lstat: a tracked symlink counts as itself, and a dangling one is no error.
                if os.lstat(os.path.join(source, name)).st_mtime > record.installation_time:
                    return True
            except FileNotFoundError:
                return True  # deleted (or renamed) since the install
        return False

    # Stand-alone tests (spack test run dptrain): the installed tree, as a user meets it.
    def test_version(self):
        """dptrain --version prints the packaged version"""
        dptrain = which(self.prefix.bin.dptrain, required=True)
        out = dptrain("--version", output=str.split, error=str.split)
        assert f"dptrain {self.spec.version}" in out, f"unexpected version line: {out}"

    def test_info(self):
        """dptrain info says Spack built it, with which variants"""
        dptrain = which(self.prefix.bin.dptrain, required=True)
        out = dptrain("info", output=str.split, error=str.split)
        assert "built by: spack" in out, f"'built by: spack' missing from dptrain info:\n{out}"
        backend = "CUDA backend ON" if self.spec.satisfies("+cuda") else "CUDA backend OFF"
        assert backend in out, f"'{backend}' missing from dptrain info:\n{out}"
        if self.spec.satisfies("+cuda"):
            toolkit = f"nvcc {join_path(self.spec['cuda'].prefix.bin, 'nvcc')}"
            assert (
                toolkit in out
            ), f"dptrain info does not name this spec's toolkit ({toolkit}):\n{out}"

    def test_installed_files(self):
        """the Slurm scripts and the documentation are installed"""
        slurm = join_path(self.prefix.share, "dptrain", "slurm")
        assert find(slurm, "*.sbatch"), f"no sbatch scripts in {slurm}"
        readme = join_path(self.prefix.share, "doc", "dptrain", "README.md")
        assert os.path.isfile(readme), f"{readme} is missing"
