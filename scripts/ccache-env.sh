# Sourced by build.sh and test.sh. One ccache for every clone on this machine: paths are hashed
# relative to the compiler's working folder, so a fresh clone elsewhere (CI's) hits what another
# clone compiled. Harmless when ccache is not installed (CMake then uses no launcher).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)} CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
