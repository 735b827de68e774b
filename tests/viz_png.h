/* viz_png.h — reading rendered PNGs back for the viz suites: pixels as RGBA
 * bytes (libpng's simplified API) and colour predicates. */
#ifndef VIZ_PNG_H
#define VIZ_PNG_H

#include "viz_style.h"

typedef struct {
    int w, h;
    unsigned char *px; /* RGBA, row-major; free() */
} vp_img;

/* Load path; 0 on success. */
int vp_load(const char *path, vp_img *im);

/* The pixel at page coordinate (x, y) (clamped to the image). */
const unsigned char *vp_at(const vp_img *im, double x, double y);

int vp_red(const unsigned char *p);
int vp_green(const unsigned char *p);
int vp_white(const unsigned char *p);
/* The default trace palette (Okabe-Ito): a write is vermilion-ish (red well
 * above blue), a read blue-ish (blue well above red), over white. */
int vp_write(const unsigned char *p);
int vp_read(const unsigned char *p);
/* Dark ink (axes, text, the generation marker). */
int vp_dark(const unsigned char *p);

/* Non-white pixels inside r. */
long vp_ink(const vp_img *im, viz_rect r);

#endif
