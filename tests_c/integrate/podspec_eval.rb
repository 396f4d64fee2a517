# podspec_eval.rb PODSPEC -- evaluate a podspec without CocoaPods and print, as JSON, the
# attributes it sets and the files its source_files globs match (relative to the podspec's folder),
# so scripts/test-integrate.sh can check what a patched podspec hands to CocoaPods. Pod::Spec here
# only records assignments; an exception in the podspec (its own `raise`) exits non-zero.
require "json"

module Pod
  class Spec
    attr_reader :attrs

    def initialize
      @attrs = {}
      $spec = self if $spec.nil?
      yield self if block_given?
    end

    def method_missing(name, *args)
      key = name.to_s
      return @attrs[key] if args.empty? && !key.end_with?("=")    # a getter (s.version)
      return super unless key.end_with?("=")
      @attrs[key.chomp("=")] = args.length == 1 ? args[0] : args
    end

    def respond_to_missing?(*)
      true
    end

    def dependency(*args)
      (@attrs["dependency"] ||= []) << args
    end

    def subspec(name)
      sub = Spec.new
      yield sub
      (@attrs["subspecs"] ||= {})[name] = sub.attrs
    end
  end
end

def install_modules_dependencies(_spec); end

path = File.expand_path(ARGV.fetch(0))
load path
attrs = $spec.attrs
dir = File.dirname(path)
matched = Array(attrs["source_files"]).flat_map do |pattern|
  Dir.glob(pattern, base: dir).select { |f| File.file?(File.join(dir, f)) }
end
excluded = Array(attrs["exclude_files"]).flat_map { |pattern| Dir.glob(pattern, base: dir) }
attrs["source_files_matched"] = (matched.uniq - excluded).sort
puts JSON.generate(attrs)
