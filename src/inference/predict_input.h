// What `ringtrain predict --input PATH` runs the model on: new examples, not a split
// of the job's data, as Keras' model.predict(x) takes them.
//   - a .npy file: [n, <model.input_shape>] (or [n, product]) of any numeric dtype NumPy
//     writes (converted to float32), taken as the model's input values as they are;
//   - a folder of images: every .jpeg/.jpg/.png/.bmp/.gif under it (recursively, in
//     sorted path order: Keras' image_dataset_from_directory(labels=None)), decoded
//     and resized as the job's data.train says when that is an image_folder entry
//     (image_size, color_mode, interpolation, crop_to_aspect_ratio, rescale), else to
//     the model's input shape [h, w, 1|3|4] with bilinear resizing.
// The returned Dataset's labels are all 0 (there are none); `names` gets each example's
// file (a folder) or index (an npy).
//
// Threading: any thread. Blocking: reads the files. Errors: INVALID_ARGUMENT about
// kConfig for a shape that does not fit the model; the data library's errors (about
// kData: NOT_FOUND, DATA_LOSS) for missing or bad files.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "config/job_config.h"
#include "data/dataset.h"

namespace ringtrain::inference {

StatusOr<data::Dataset> LoadPredictInput(const config::JobConfig& job, const std::vector<int>& input_shape,
                                         const std::string& path, std::vector<std::string>* names);

}  // namespace ringtrain::inference
