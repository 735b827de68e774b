/work/wt-anneal/cli/cmd_export.o: cli/cmd_export.c analysis/an_export.h \
 analysis/an_stream.h core/rn_config.h core/rn_error.h core/rn_error.h \
 core/rn_probe.h trace/tr_reader.h analysis/an_load.h cli/cli.h \
 core/rn_state.h core/rn_config.h core/rn_real.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 core/rn_atomic.h
analysis/an_export.h:
analysis/an_stream.h:
core/rn_config.h:
core/rn_error.h:
core/rn_error.h:
core/rn_probe.h:
trace/tr_reader.h:
analysis/an_load.h:
cli/cli.h:
core/rn_state.h:
core/rn_config.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
core/rn_atomic.h:
