/* viz_png.c — PNG read-back helpers for the viz suites (viz_png.h). */
#include "viz_png.h"

#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

int vp_load(const char *path, vp_img *im)
{
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    im->px = NULL;
    if (!png_image_begin_read_from_file(&pi, path)) return -1;
    pi.format = PNG_FORMAT_RGBA;
    im->w = (int)pi.width;
    im->h = (int)pi.height;
    im->px = malloc(PNG_IMAGE_SIZE(pi));
    if (!im->px || !png_image_finish_read(&pi, NULL, im->px, 0, NULL)) {
        png_image_free(&pi);
        free(im->px);
        im->px = NULL;
        return -1;
    }
    return 0;
}

const unsigned char *vp_at(const vp_img *im, double x, double y)
{
    int xi = (int)floor(x), yi = (int)floor(y);
    if (xi < 0) xi = 0;
    if (yi < 0) yi = 0;
    if (xi >= im->w) xi = im->w - 1;
    if (yi >= im->h) yi = im->h - 1;
    return im->px + ((size_t)yi * im->w + xi) * 4;
}

int vp_red(const unsigned char *p) { return p[0] > p[1] + 60 && p[0] > p[2] + 60; }
int vp_green(const unsigned char *p) { return p[1] > p[0] + 60 && p[1] > p[2] + 40; }
int vp_white(const unsigned char *p) { return p[0] > 245 && p[1] > 245 && p[2] > 245; }
int vp_write(const unsigned char *p) { return p[0] > p[2] + 40 && p[0] > p[1] + 20; }
int vp_read(const unsigned char *p) { return p[2] > p[0] + 30 && p[2] > p[1] + 10; }
int vp_dark(const unsigned char *p) { return p[0] < 120 && p[1] < 120 && p[2] < 120; }

long vp_ink(const vp_img *im, viz_rect r)
{
    long n = 0;
    for (int y = (int)r.y; y < (int)(r.y + r.h); y++)
        for (int x = (int)r.x; x < (int)(r.x + r.w); x++)
            if (x >= 0 && y >= 0 && x < im->w && y < im->h && !vp_white(vp_at(im, x, y))) n++;
    return n;
}
