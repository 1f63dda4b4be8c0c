// JPEG through libjpeg-turbo's TurboJPEG API (2.1: tjDecompressHeader3 / tjDecompress2).
// The defaults (accurate integer IDCT, fancy upsampling) are tf.io.decode_jpeg's and PIL's,
// so a full-size decode gives their bytes. Any warning (corrupt data, a truncated file)
// is an error here, not a grey patch in a training image.
#include <turbojpeg.h>

#include <climits>
#include <string>
#include <vector>

#include "image/codecs.h"

namespace ringtrain::image {
namespace {

// One decompressor per thread: tjInitDecompress allocates, and a handle may not be
// shared between threads. A handle that failed on a corrupt file is replaced: libjpeg-turbo
// 2.1 can leave it in a state where the next file's header reads as 0x0.
class Handle {
 public:
  Handle() : h_(tjInitDecompress()) {}
  ~Handle() {
    if (h_ != nullptr) tjDestroy(h_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  tjhandle get() const { return h_; }
  void Renew() {
    if (h_ != nullptr) tjDestroy(h_);
    h_ = tjInitDecompress();
  }

 private:
  tjhandle h_;
};

Handle& ThreadHandle() {
  thread_local Handle handle;
  return handle;
}

Status TjError(tjhandle h, const char* what) {
  return Corrupt(std::string("corrupt JPEG data: ") + what + ": " + tjGetErrorStr2(h));
}

// The smallest of libjpeg-turbo's power-of-two DCT reductions (1/2, 1/4, 1/8) that keeps
// both sides at least min_h x min_w, as PIL's Image.draft picks them; full size when none
// does (e.g. 500x375 for 224x224) or without a minimum. The other n/8 scales are left out
// on purpose: they are slower than a full-size decode (no SIMD IDCT, and 4:2:0 chroma
// goes through a 2n x 2n IDCT): 500x375 MNIST-like JPEGs decode in 0.27 ms at 8/8,
// 0.48 ms at 5/8, 0.82 ms at 7/8, 0.14 ms at 4/8; noisy photos 1.68 / 1.54 / 2.56 / 1.30.
tjscalingfactor PickScale(int h, int w, int min_h, int min_w) {
  tjscalingfactor best{1, 1};
  if (min_h <= 0 || min_w <= 0) return best;
  for (int denom : {2, 4, 8}) {
    const tjscalingfactor f{1, denom};
    if (TJSCALED(h, f) < min_h || TJSCALED(w, f) < min_w) break;
    best = f;
  }
  return best;
}

StatusOr<Image> DecodeJpegWith(tjhandle h, const uint8_t* data, size_t size, int channels, int min_height,
                               int min_width) {
  if (h == nullptr) return InternalError("libjpeg-turbo: cannot create a decompressor");
  if (size > static_cast<size_t>(ULONG_MAX)) return Corrupt("JPEG too large");
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(h, data, static_cast<unsigned long>(size), &width, &height, &subsamp, &colorspace) != 0) {
    return TjError(h, "header");
  }
  RT_RETURN_IF_ERROR(CheckSize(height, width, 1));
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  if (channels == 0) channels = colorspace == TJCS_GRAY ? 1 : 3;
  int format = channels == 1 ? TJPF_GRAY : channels == 3 ? TJPF_RGB : TJPF_RGBA;
  // libjpeg-turbo converts CMYK only to CMYK: decode that and convert below, as TF does
  // for Adobe's (inverted) CMYK.
  if (cmyk) format = TJPF_CMYK;
  const tjscalingfactor sf = PickScale(height, width, min_height, min_width);
  Image img;
  img.height = TJSCALED(height, sf);
  img.width = TJSCALED(width, sf);
  const int stored = tjPixelSize[format];
  std::vector<uint8_t> buf(static_cast<size_t>(img.height) * img.width * stored);
  if (tjDecompress2(h, data, static_cast<unsigned long>(size), buf.data(), img.width, 0, img.height, format,
                    TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
    return TjError(h, "decoding");
  }
  if (!cmyk) {
    img.channels = channels;
    img.pixels = std::move(buf);
    return img;
  }
  Image rgb{img.height, img.width, 3, {}};
  rgb.pixels.resize(static_cast<size_t>(img.height) * img.width * 3);
  for (size_t p = 0, n = static_cast<size_t>(img.height) * img.width; p < n; ++p) {
    const int k = buf[4 * p + 3];
    for (int c = 0; c < 3; ++c) rgb.pixels[3 * p + c] = static_cast<uint8_t>(buf[4 * p + c] * k / 255);
  }
  return ConvertChannels(std::move(rgb), channels);
}

}  // namespace

StatusOr<Image> DecodeJpeg(const uint8_t* data, size_t size, int channels, int min_height, int min_width) {
  Handle& handle = ThreadHandle();
  StatusOr<Image> img = DecodeJpegWith(handle.get(), data, size, channels, min_height, min_width);
  if (!img.ok()) handle.Renew();  // nothing of a bad file may reach the next one
  return img;
}

}  // namespace ringtrain::image
