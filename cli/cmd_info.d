/work/wt-anneal/cli/cmd_info.o: cli/cmd_info.c cli/cli.h core/rn_error.h \
 core/rn_state.h core/rn_config.h core/rn_error.h core/rn_real.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 core/rn_modelfile.h core/rn_model.h core/rn_params.h core/rn_modelinfo.h \
 core/rn_rows.h
cli/cli.h:
core/rn_error.h:
core/rn_state.h:
core/rn_config.h:
core/rn_error.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
core/rn_modelfile.h:
core/rn_model.h:
core/rn_params.h:
core/rn_modelinfo.h:
core/rn_rows.h:
