/work/wt-anneal/cli/cmd_attribute.o: cli/cmd_attribute.c \
 analysis/an_attribute.h core/rn_error.h trace/tr_reader.h \
 core/rn_config.h core/rn_error.h core/rn_probe.h analysis/an_load.h \
 analysis/an_stats.h analysis/an_load.h analysis/an_stream.h \
 core/rn_rows.h cli/cli.h core/rn_state.h core/rn_config.h core/rn_real.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 core/rn_atomic.h
analysis/an_attribute.h:
core/rn_error.h:
trace/tr_reader.h:
core/rn_config.h:
core/rn_error.h:
core/rn_probe.h:
analysis/an_load.h:
analysis/an_stats.h:
analysis/an_load.h:
analysis/an_stream.h:
core/rn_rows.h:
cli/cli.h:
core/rn_state.h:
core/rn_config.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
core/rn_atomic.h:
