// The 128-D face descriptor network. Its template instantiation is slow to compile, so it lives alone
// in face_network.cpp behind this small interface.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include <dlib/matrix.h>
#include <dlib/pixel.h>

namespace faceengine {

using FaceDescriptor = std::array<float, 128>;
using FaceChip = dlib::matrix<dlib::rgb_pixel>;

class FaceDescriptorNetwork {
public:
    // Throws (dlib::serialization_error, std::exception) when the model cannot be read.
    explicit FaceDescriptorNetwork(const std::string &modelPath);
    ~FaceDescriptorNetwork();
    FaceDescriptorNetwork(const FaceDescriptorNetwork &) = delete;
    FaceDescriptorNetwork &operator=(const FaceDescriptorNetwork &) = delete;

    // One descriptor per 150×150 aligned chip. Mutates internal buffers: one network per thread.
    std::vector<FaceDescriptor> describe(const std::vector<FaceChip> &chips);

private:
    struct Network;
    std::unique_ptr<Network> network_;
};

}  // namespace faceengine
