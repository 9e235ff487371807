/// The release every executable of this tree belongs to (`facegate --version`, `facegate_build_info`).
public enum Release {
    public static let version = "0.9.0"
}
