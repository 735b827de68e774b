/work/wt-anneal/cli/cmd_version.o: cli/cmd_version.c cli/cli.h \
 core/rn_error.h core/rn_state.h core/rn_config.h core/rn_error.h \
 core/rn_real.h /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 core/rn_version.h
cli/cli.h:
core/rn_error.h:
core/rn_state.h:
core/rn_config.h:
core/rn_error.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
core/rn_version.h:
