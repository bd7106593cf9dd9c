# What `cmake --install` (and so the Spack recipe) puts under the prefix, besides bin/dptrain
# (installed by app/): the Slurm scripts a user copies and submits, and the documentation.
#   share/dptrain/slurm/   sbatch scripts, helper scripts, partition settings, their README
#   share/doc/dptrain/     README.md, docs/*.md (the guide), datasets/README.md, slurm/README.md
# tests/install checks this layout; the recipe's stand-alone tests rely on it.

set(DPTRAIN_SLURM_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/dptrain/slurm)
set(_dptrain_executable OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# Patterns rather than a file list, so scripts added to slurm/ are installed without editing this.
# testcluster/ is left out: it starts a throw-away Slurm cluster for our own tests, not for sites.
# OPTIONAL instead of if(EXISTS): checked at install time, so a build configured before slurm/
# appeared in the checkout still installs it.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/slurm/ DESTINATION ${DPTRAIN_SLURM_INSTALL_DIR} OPTIONAL
  FILES_MATCHING
    PATTERN "*.sbatch" PERMISSIONS ${_dptrain_executable}
    PATTERN "*.sh" PERMISSIONS ${_dptrain_executable}
    PATTERN "*.env"
    PATTERN "*.md"
    PATTERN "testcluster" EXCLUDE)

install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The guide's pages, beside the README as in the source tree, so the README's links work there too.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
install(FILES ${PROJECT_SOURCE_DIR}/datasets/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/datasets)
install(FILES ${PROJECT_SOURCE_DIR}/slurm/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/slurm OPTIONAL)
