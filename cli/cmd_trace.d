/work/wt-anneal/cli/cmd_trace.o: cli/cmd_trace.c cli/cli.h \
 core/rn_error.h core/rn_state.h core/rn_config.h core/rn_error.h \
 core/rn_real.h /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 core/rn_device.h trace/tr_record.h core/rn_runtime.h core/rn_device.h \
 core/rn_intervene.h core/rn_model.h core/rn_params.h core/rn_probe.h \
 core/rn_state.h trace/tr_writer.h core/rn_config.h core/rn_probe.h \
 trace/tr_select.h
cli/cli.h:
core/rn_error.h:
core/rn_state.h:
core/rn_config.h:
core/rn_error.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
core/rn_device.h:
trace/tr_record.h:
core/rn_runtime.h:
core/rn_device.h:
core/rn_intervene.h:
core/rn_model.h:
core/rn_params.h:
core/rn_probe.h:
core/rn_state.h:
trace/tr_writer.h:
core/rn_config.h:
core/rn_probe.h:
trace/tr_select.h:
