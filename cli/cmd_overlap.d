/work/wt-anneal/cli/cmd_overlap.o: cli/cmd_overlap.c \
 analysis/an_overlap.h core/rn_error.h trace/tr_reader.h core/rn_config.h \
 core/rn_error.h core/rn_probe.h cli/cli.h core/rn_state.h \
 core/rn_config.h core/rn_real.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 core/rn_atomic.h core/rn_rows.h
analysis/an_overlap.h:
core/rn_error.h:
trace/tr_reader.h:
core/rn_config.h:
core/rn_error.h:
core/rn_probe.h:
cli/cli.h:
core/rn_state.h:
core/rn_config.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
core/rn_atomic.h:
core/rn_rows.h:
