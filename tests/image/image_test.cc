// ringtrain_image against PIL's decodes of files PIL wrote (PIL's JPEG codec is
// libjpeg-turbo too, so a JPEG decodes to the same bytes), and tf.image.resize's values
// worked out by hand for tiny images.
#include "image/image.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/exit_policy.h"
#include "image/test_images.h"
#include "testing/temp_dir.h"

namespace ringtrain::image {
namespace {

using json = nlohmann::json;
using ringtrain::testing::MakeImages;
using ringtrain::testing::ReadBytes;
using ringtrain::testing::ReadSize;
using ringtrain::testing::TempDir;

StatusOr<Image> DecodeFile(const std::string& path, int channels, int min_h = 0, int min_w = 0) {
  const std::vector<uint8_t> b = ReadBytes(path);
  return Decode(b.data(), b.size(), channels, min_h, min_w);
}

Image Make(int h, int w, int c, std::vector<uint8_t> px) { return Image{h, w, c, std::move(px)}; }

std::vector<float> DoResize(const Image& in, int h, int w, Interpolation m, bool crop = false) {
  std::vector<float> out(static_cast<size_t>(h) * w * in.channels, -1.0f);
  Resize(in, h, w, m, crop, out.data());
  return out;
}

void ExpectBadData(const Status& s, const std::string& what) {
  ASSERT_FALSE(s.ok()) << what;
  EXPECT_EQ(s.code(), Code::kDataLoss) << what << ": " << s.ToString();
  EXPECT_EQ(ExitCodeFor(s), 3) << what << ": " << s.ToString();
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
}

TEST(CodecTest, SniffsMagicNumbersAndKerasExtensions) {
  const uint8_t jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0}, png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  const uint8_t gif[] = {'G', 'I', 'F', '8', '9', 'a'}, bmp[] = {'B', 'M', 0, 0}, txt[] = {'h', 'i'};
  EXPECT_EQ(SniffCodec(jpeg, sizeof(jpeg)), Codec::kJpeg);
  EXPECT_EQ(SniffCodec(png, sizeof(png)), Codec::kPng);
  EXPECT_EQ(SniffCodec(gif, sizeof(gif)), Codec::kGif);
  EXPECT_EQ(SniffCodec(bmp, sizeof(bmp)), Codec::kBmp);
  EXPECT_EQ(SniffCodec(txt, sizeof(txt)), Codec::kUnknown);
  EXPECT_EQ(SniffCodec(png, 3), Codec::kUnknown);
  for (const char* ok : {"a.jpg", "b.JPEG", "c.Png", "d.bmp", "e.GIF", "x.y.jpg"}) EXPECT_TRUE(HasImageExtension(ok)) << ok;
  for (const char* no : {"a.txt", "jpg", "a.jpg.bak", "a.tif", "a.webp", ".DS_Store"}) EXPECT_FALSE(HasImageExtension(no)) << no;
  EXPECT_EQ(*ParseInterpolation("area"), Interpolation::kArea);
  EXPECT_FALSE(ParseInterpolation("lanczos3").ok());
}

TEST(DecodeTest, EveryCodecAndModeDecodesToPilsPixels) {
  TempDir tmp;
  const std::string d = tmp.path() + "/";
  struct Case {
    std::string name, format, mode;
    int channels;  // asked of Decode
    std::string expect_mode;
  };
  const std::vector<Case> cases = {
      {"gray.png", "PNG", "L", 0, "L"},          {"rgb.png", "PNG", "RGB", 0, "RGB"},
      {"rgba.png", "PNG", "RGBA", 0, "RGBA"},    {"la.png", "PNG", "LA", 0, "LA"},
      {"pal.png", "PNG", "P", 3, "RGB"},         {"rgb.jpg", "JPEG", "RGB", 0, "RGB"},
      {"gray.jpg", "JPEG", "L", 0, "L"},         {"rgb.bmp", "BMP", "RGB", 0, "RGB"},
      {"rgb.gif", "GIF", "RGB", 0, "RGB"},       {"gray_as_rgb.png", "PNG", "L", 3, "RGB"},
      {"rgba_as_rgb.png", "PNG", "RGBA", 3, "RGB"}, {"rgb_as_rgba.jpg", "JPEG", "RGB", 4, "RGBA"},
      {"gray_as_rgb.jpg", "JPEG", "L", 3, "RGB"},
  };
  json spec = json::array();
  for (const auto& c : cases) {
    spec.push_back({{"path", d + c.name}, {"format", c.format}, {"mode", c.mode}, {"h", 37}, {"w", 53},
                    {"fill", "gradient"}, {"expect", d + c.name + ".raw"}, {"expect_mode", c.expect_mode}});
  }
  ASSERT_TRUE(MakeImages(spec, tmp.path()));
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto img = DecodeFile(d + c.name, c.channels);
    ASSERT_TRUE(img.ok()) << img.status().ToString();
    const std::vector<int> size = ReadSize(d + c.name + ".raw");
    EXPECT_EQ(img->height, size[0]);
    EXPECT_EQ(img->width, size[1]);
    EXPECT_EQ(img->channels, size[2]);
    EXPECT_TRUE(img->pixels == ReadBytes(d + c.name + ".raw"));
    const std::vector<uint8_t> b = ReadBytes(d + c.name);
    auto info = ReadInfo(b.data(), std::min<size_t>(b.size(), 4096));
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->height, 37);
    EXPECT_EQ(info->width, 53);
  }
}

TEST(DecodeTest, SixteenBitPngKeepsTheHighByte) {
  TempDir tmp;
  const std::string p = tmp.path() + "/16.png";
  ASSERT_TRUE(MakeImages(json::array({{{"path", p}, {"format", "PNG"}, {"mode", "I;16"}, {"h", 5}, {"w", 9},
                                       {"fill", "gradient"}}}),
                         tmp.path()));
  auto img = DecodeFile(p, 1);
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 9; ++x) EXPECT_EQ(img->pixels[y * 9 + x], (7 * y + 13 * x) % 256) << y << "," << x;
  }
}

TEST(DecodeTest, JpegUsesDctScalingDownToTheMinimumSize) {
  TempDir tmp;
  const std::string p = tmp.path() + "/big.jpg", q = tmp.path() + "/big2.jpg";
  // 300x400 to at least 70x90: 1/4 gives 75x100, the smallest scale that is not below;
  // to at least 150x200: 4/8 gives exactly that. PIL's draft picks the same two.
  ASSERT_TRUE(MakeImages(json::array({{{"path", p}, {"format", "JPEG"}, {"mode", "RGB"}, {"h", 300}, {"w", 400},
                                       {"fill", "gradient"}, {"expect", p + ".raw"}, {"expect_mode", "RGB"},
                                       {"draft", {90, 70}}},
                                      {{"path", q}, {"format", "JPEG"}, {"mode", "RGB"}, {"h", 300}, {"w", 400},
                                       {"fill", "gradient"}, {"expect", q + ".raw"}, {"expect_mode", "RGB"},
                                       {"draft", {200, 150}}}}),
                         tmp.path()));
  auto img = DecodeFile(p, 3, 70, 90);
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->height, 75);
  EXPECT_EQ(img->width, 100);
  EXPECT_EQ(ReadSize(p + ".raw"), (std::vector<int>{75, 100, 3}));
  EXPECT_TRUE(img->pixels == ReadBytes(p + ".raw"));  // libjpeg's scaled IDCT, as PIL's draft mode
  auto half = DecodeFile(q, 3, 150, 200);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_EQ(ReadSize(q + ".raw"), (std::vector<int>{150, 200, 3}));
  EXPECT_EQ(half->height, 150);
  EXPECT_TRUE(half->pixels == ReadBytes(q + ".raw"));
  // Where the 2x rule alone would reach 3/8 (113x150), 1/2 as PIL's draft: 3/8 decodes slower.
  auto not_odd = DecodeFile(q, 3, 100, 100);
  ASSERT_TRUE(not_odd.ok()) << not_odd.status().ToString();
  EXPECT_EQ(not_odd->height, 150);
  EXPECT_TRUE(not_odd->pixels == ReadBytes(q + ".raw"));
  // Less than twice the minimum in a side (1/2 would be below it): full size, never 5/8 .. 7/8.
  for (auto [mh, mw] : {std::pair{151, 90}, std::pair{70, 201}, std::pair{264, 90}, std::pair{300, 300}}) {
    auto f = DecodeFile(p, 3, mh, mw);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->height, 300) << mh << "x" << mw;
    EXPECT_EQ(f->width, 400) << mh << "x" << mw;
  }
}

TEST(ConvertTest, TfImageChannelRules) {
  // Decode's conversion on PNGs of known pixels: rgb->gray by rgb_to_grayscale's luma.
  TempDir tmp;
  const std::string d = tmp.path() + "/";
  ASSERT_TRUE(MakeImages(json::array({{{"path", d + "c.png"}, {"format", "PNG"}, {"mode", "RGBA"}, {"h", 2},
                                       {"w", 3}, {"fill", {200, 100, 50, 7}}},
                                      {{"path", d + "la.png"}, {"format", "PNG"}, {"mode", "LA"}, {"h", 2},
                                       {"w", 3}, {"fill", {90, 40}}}}),
                         tmp.path()));
  const float v = (200 * (1.0f / 255) * 0.2989f + 100 * (1.0f / 255) * 0.5870f + 50 * (1.0f / 255) * 0.1140f) * 255.5f;
  auto gray = DecodeFile(d + "c.png", 1);
  ASSERT_TRUE(gray.ok());
  EXPECT_EQ(gray->channels, 1);
  EXPECT_EQ(gray->pixels[0], static_cast<uint8_t>(v));
  EXPECT_EQ(gray->pixels[0], 124);  // 0.2989*200 + 0.587*100 + 0.114*50 = 124.18
  auto rgb = DecodeFile(d + "c.png", 3);
  ASSERT_TRUE(rgb.ok());
  EXPECT_EQ(std::vector<uint8_t>(rgb->pixels.begin(), rgb->pixels.begin() + 3), (std::vector<uint8_t>{200, 100, 50}));
  // Gray+alpha (2 channels): to rgb by repetition, alpha dropped; to rgba alpha kept.
  auto la_rgb = DecodeFile(d + "la.png", 3);
  ASSERT_TRUE(la_rgb.ok()) << la_rgb.status().ToString();
  EXPECT_EQ(std::vector<uint8_t>(la_rgb->pixels.begin(), la_rgb->pixels.begin() + 3), (std::vector<uint8_t>{90, 90, 90}));
  auto la_rgba = DecodeFile(d + "la.png", 4);
  ASSERT_TRUE(la_rgba.ok());
  EXPECT_EQ(std::vector<uint8_t>(la_rgba->pixels.begin(), la_rgba->pixels.begin() + 4),
            (std::vector<uint8_t>{90, 90, 90, 40}));
  auto la_gray = DecodeFile(d + "la.png", 1);
  ASSERT_TRUE(la_gray.ok());
  EXPECT_EQ(la_gray->pixels[5], 90);
  EXPECT_FALSE(DecodeFile(d + "c.png", 2).ok());  // Keras' color modes are 1, 3, 4
}

TEST(ResizeTest, BilinearHalfPixelCentres) {
  // 1x2 -> 1x4: sample points -0.25, 0.25, 0.75, 1.25 of [0, 100], clamped at the edges.
  EXPECT_EQ(DoResize(Make(1, 2, 1, {0, 100}), 1, 4, Interpolation::kBilinear), (std::vector<float>{0, 25, 75, 100}));
  // 2x2 -> 3x3 (scale 2/3): points -1/6, 0.5, 7/6 on each axis.
  auto out = DoResize(Make(2, 2, 1, {0, 60, 120, 180}), 3, 3, Interpolation::kBilinear);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[4], 90);  // the centre: the mean of the four
  EXPECT_EQ(out[8], 180);
  EXPECT_FLOAT_EQ(out[1], 30);
  // Downscale 1x4 -> 1x2: points 0.5 and 2.5.
  EXPECT_EQ(DoResize(Make(1, 4, 1, {0, 10, 20, 40}), 1, 2, Interpolation::kBilinear), (std::vector<float>{5, 30}));
}

TEST(ResizeTest, NearestHalfPixelCentres) {
  // 1x4 -> 1x2: floor((x + 0.5) * 2) = 1, 3.
  EXPECT_EQ(DoResize(Make(1, 4, 1, {1, 2, 3, 4}), 1, 2, Interpolation::kNearest), (std::vector<float>{2, 4}));
  // 1x2 -> 1x5: floor((x + 0.5) * 0.4) = 0, 0, 1, 1, 1.
  EXPECT_EQ(DoResize(Make(1, 2, 1, {7, 9}), 1, 5, Interpolation::kNearest), (std::vector<float>{7, 7, 9, 9, 9}));
}

TEST(ResizeTest, AreaAveragesCoveredCells) {
  EXPECT_EQ(DoResize(Make(1, 4, 1, {0, 10, 20, 40}), 1, 2, Interpolation::kArea), (std::vector<float>{5, 30}));
  // 1x3 -> 1x2: [0, 1.5) and [1.5, 3): (a + b/2) / 1.5 and (b/2 + c) / 1.5.
  auto out = DoResize(Make(1, 3, 1, {30, 60, 90}), 1, 2, Interpolation::kArea);
  EXPECT_FLOAT_EQ(out[0], 40);
  EXPECT_FLOAT_EQ(out[1], 80);
  // 2x2 -> 1x1: the mean.
  EXPECT_EQ(DoResize(Make(2, 2, 1, {1, 2, 3, 6}), 1, 1, Interpolation::kArea), (std::vector<float>{3}));
}

TEST(ResizeTest, BicubicIsKeysCubicWithRenormalisedEdges) {
  // Keys' a = -0.5 reproduces a linear ramp wherever all four taps are in the image.
  std::vector<uint8_t> ramp;
  for (int i = 0; i < 8; ++i) ramp.push_back(static_cast<uint8_t>(10 * i));
  auto out = DoResize(Make(1, 8, 1, ramp), 1, 16, Interpolation::kBicubic);
  for (int x = 0; x < 16; ++x) {
    const float in = (x + 0.5f) * 0.5f - 0.5f;
    if (std::floor(in) - 1 >= 0 && std::floor(in) + 2 <= 7) {
      EXPECT_NEAR(out[x], 10 * in, 1e-4) << x;
    }
  }
  // At the edges the out-of-image tap drops out and the rest are renormalised: a constant
  // image stays constant everywhere.
  auto flat = DoResize(Make(3, 3, 2, std::vector<uint8_t>(18, 77)), 7, 5, Interpolation::kBicubic);
  for (float v : flat) EXPECT_NEAR(v, 77, 1e-4);
  // x = 0 of the ramp: in = -0.25, taps at -2, -1, 0, 1; the first two are outside and
  // drop out, leaving pixel 0 (distance 0.25) and pixel 1 (distance 1.25), renormalised.
  auto keys = [](double t) {
    t = std::abs(t);
    const double a = -0.5;
    return t <= 1 ? ((a + 2) * t - (a + 3)) * t * t + 1 : ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  };
  const double w1 = keys(0.25), w2 = keys(1.25);
  EXPECT_NEAR(out[0], (w1 * 0 + w2 * 10) / (w1 + w2), 1e-4);
}

TEST(ResizeTest, SameSizeCopiesAndCropToAspectRatioTakesTheCentre) {
  std::vector<uint8_t> px(4 * 8);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 3);
  const Image img = Make(4, 8, 1, px);
  for (auto m : {Interpolation::kBilinear, Interpolation::kNearest, Interpolation::kArea, Interpolation::kBicubic}) {
    EXPECT_EQ(DoResize(img, 4, 8, m), std::vector<float>(px.begin(), px.end()));
  }
  // 4x8 to 2x2 with crop: the centred 4x4 window (columns 2..5), then area halves it.
  auto out = DoResize(img, 2, 2, Interpolation::kArea, /*crop=*/true);
  auto at = [&](int y, int x) { return static_cast<float>(px[y * 8 + x]); };
  EXPECT_FLOAT_EQ(out[0], (at(0, 2) + at(0, 3) + at(1, 2) + at(1, 3)) / 4);
  EXPECT_FLOAT_EQ(out[3], (at(2, 4) + at(2, 5) + at(3, 4) + at(3, 5)) / 4);
  // Crop to a size of the same aspect: the crop is the whole image.
  EXPECT_EQ(DoResize(img, 2, 4, Interpolation::kNearest, true), DoResize(img, 2, 4, Interpolation::kNearest, false));
}

TEST(BadDataTest, CorruptTruncatedAndHostileFilesAreDataErrors) {
  TempDir tmp;
  const std::string d = tmp.path() + "/";
  json spec = json::array();
  for (const char* f : {"PNG", "JPEG", "BMP", "GIF"}) {
    spec.push_back({{"path", d + "ok." + std::string(f)}, {"format", f}, {"mode", "RGB"}, {"h", 40}, {"w", 60},
                    {"fill", "gradient"}});
  }
  ASSERT_TRUE(MakeImages(spec, tmp.path()));
  for (const char* f : {"PNG", "JPEG", "BMP", "GIF"}) {
    SCOPED_TRACE(f);
    const std::vector<uint8_t> good = ReadBytes(d + "ok." + std::string(f));
    ASSERT_TRUE(Decode(good.data(), good.size(), 3).ok());
    // Every truncation fails cleanly (or, for the few formats that tolerate a short
    // tail, decodes to the right size).
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{10}, good.size() / 3, good.size() / 2,
                     good.size() - 1}) {
      auto img = Decode(good.data(), n, 3);
      if (img.ok()) {
        EXPECT_EQ(img->pixels.size(), size_t{40} * 60 * 3) << n;
      } else {
        ExpectBadData(img.status(), std::string(f) + " cut to " + std::to_string(n));
      }
    }
  }
  // Truncated JPEG and PNG in particular are errors (libjpeg's warning is one here).
  const std::vector<uint8_t> jpg = ReadBytes(d + "ok.JPEG"), png = ReadBytes(d + "ok.PNG");
  ExpectBadData(Decode(jpg.data(), jpg.size() / 2, 3).status(), "half a JPEG");
  ExpectBadData(Decode(png.data(), png.size() - 20, 3).status(), "PNG without its end");
  // A flipped byte in the PNG's image data: its CRC fails.
  std::vector<uint8_t> bad = png;
  bad[bad.size() - 30] ^= 0x55;
  ExpectBadData(Decode(bad.data(), bad.size(), 3).status(), "PNG CRC");
  // Garbage in the JPEG's entropy-coded data with a bogus marker.
  bad = jpg;
  for (size_t i = bad.size() / 2; i < bad.size() / 2 + 64; ++i) bad[i] = (i % 2) ? 0xFF : 0xC0;
  ExpectBadData(Decode(bad.data(), bad.size(), 3).status(), "JPEG garbage");
  // A bad file leaves nothing behind: the next JPEG on this thread decodes (libjpeg-turbo's
  // handle is renewed after an error; before, its next header could read as 0x0).
  ASSERT_TRUE(MakeImages(json::array({{{"path", d + "small.jpg"}, {"format", "JPEG"}, {"mode", "RGB"}, {"h", 4},
                                       {"w", 6}, {"fill", "gradient"}},
                                      {{"path", d + "x.jpg"}, {"format", "JPEG"}, {"mode", "RGB"}, {"h", 12},
                                       {"w", 10}, {"fill", "gradient"}}}),
                         tmp.path()));
  const std::vector<uint8_t> small = ReadBytes(d + "small.jpg"), x = ReadBytes(d + "x.jpg");
  for (const auto& [cut, n] : {std::pair<const std::vector<uint8_t>*, size_t>{&jpg, jpg.size() / 2},
                               {&jpg, jpg.size() / 3}, {&jpg, size_t{10}}, {&x, x.size() / 2}}) {
    ExpectBadData(Decode(cut->data(), n, 3, 256, 256).status(), "cut JPEG");
    for (int channels : {1, 3}) {
      auto next = Decode(small.data(), small.size(), channels, 4, 6);
      ASSERT_TRUE(next.ok()) << "after a JPEG cut to " << n << ": " << next.status().ToString();
      EXPECT_EQ(next->pixels.size(), size_t{4} * 6 * channels);
    }
  }
  // Not an image at all.
  const std::string text = "hello, I am not an image";
  auto s = Decode(reinterpret_cast<const uint8_t*>(text.data()), text.size(), 3).status();
  ExpectBadData(s, "text");
  EXPECT_NE(s.message().find("not a JPEG, PNG, BMP or GIF image"), std::string::npos);
  // Headers claiming absurd sizes are refused before any allocation.
  bad = png;
  bad[16] = 0x00, bad[17] = 0x01, bad[18] = 0x00, bad[19] = 0x00;  // width 65536
  bad[20] = 0x00, bad[21] = 0x01, bad[22] = 0x00, bad[23] = 0x00;  // height 65536
  ExpectBadData(ReadInfo(bad.data(), bad.size()).status(), "huge PNG");
  ExpectBadData(Decode(bad.data(), bad.size(), 3).status(), "huge PNG");
  std::vector<uint8_t> gif = ReadBytes(d + "ok.GIF");
  gif[6] = gif[7] = gif[8] = gif[9] = 0xFF;  // 65535 x 65535
  ExpectBadData(Decode(gif.data(), gif.size(), 3).status(), "huge GIF");
  std::vector<uint8_t> bmp = ReadBytes(d + "ok.BMP");
  bmp[18] = bmp[19] = 0xFF, bmp[20] = 0x7F, bmp[21] = 0x00;  // width 8388607
  ExpectBadData(Decode(bmp.data(), bmp.size(), 3).status(), "huge BMP");
}

}  // namespace
}  // namespace ringtrain::image
